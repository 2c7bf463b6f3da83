"""One rank fails while the others wait in a barrier: run through ``python -m ompy`` the job ends.

``argv[1]`` picks how rank 1 fails: ``raise`` (an exception), ``exit`` (``sys.exit(7)``) or
``ok`` (it does not: every rank prints ``done``).
"""

import sys

from ompy import MPI

comm = MPI.COMM_WORLD
if comm.rank == 1 and sys.argv[1] == "raise":
    raise ZeroDivisionError("rank 1 divided by zero")
if comm.rank == 1 and sys.argv[1] == "exit":
    sys.exit(7)
comm.Barrier()
print("done", comm.rank, flush=True)
