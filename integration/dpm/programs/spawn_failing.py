"""Spawns workers of which one raises (argv[1]: the rank that raises, in the worker job)."""

import sys

from ompy import MPI

if MPI.Comm.Get_parent() == MPI.COMM_NULL:  # the parent: spawn copies of this program
    inter = MPI.COMM_WORLD.Spawn(sys.executable, args=[__file__, sys.argv[1]], maxprocs=3)
    inter.recv(source=0, tag=1)  # never comes: the failing worker ends the run
else:
    if MPI.COMM_WORLD.rank == int(sys.argv[1]):
        raise RuntimeError("worker gives up")
    MPI.COMM_WORLD.Barrier()
