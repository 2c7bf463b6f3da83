"""Rank 1's object does not pickle inside an allgather; it is slow to let its error out.

Its peers learn of the failure through the collective at once and raise ("rank 1 failed in
this collective"), well before rank 1's own exception reaches the launcher: the report must
still name rank 1, with its traceback.
"""

import time

from ompy import MPI

comm = MPI.COMM_WORLD


class Unpicklable:
    def __reduce__(self):
        raise TypeError("this object refuses to be pickled")


try:
    comm.allgather(Unpicklable() if comm.rank == 1 else comm.rank)
finally:
    if comm.rank == 1:
        time.sleep(0.5)  # the peers' consequential errors get to the launcher first
