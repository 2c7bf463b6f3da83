"""ERRORS_ARE_FATAL ends the job: the last rank sends to a rank that does not exist on a
communicator with that handler while the others wait for a message that never comes."""

import numpy as np

from ompy import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
comm = world.Dup()
comm.Set_errhandler(MPI.ERRORS_ARE_FATAL)
if rank == size - 1:
    comm.Send(np.zeros(1), size + 5)
    print("still alive after a fatal error", flush=True)
else:
    world.Recv(np.zeros(1), size - 1, 77)  # never sent: only the abort ends this
    print("received the impossible", flush=True)
