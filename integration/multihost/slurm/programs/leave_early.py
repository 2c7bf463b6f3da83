"""Rank 1 leaves in the way ``argv[1]`` names while every other rank waits for a message from it.

``abort``: ``Comm.Abort(7)``; ``raise``: an uncaught exception; ``exit``: ``sys.exit(5)``;
``kill``: SIGKILL to itself.
Without the job ending, the others would wait for ever; the test's timeout catches that.
"""

import os
import signal
import sys

from ompy import MPI

comm = MPI.COMM_WORLD
print(f"rank {comm.rank} up", flush=True)
comm.Barrier()
if comm.rank == 1:
    how = sys.argv[1]
    if how == "abort":
        comm.Abort(7)
    elif how == "raise":
        raise RuntimeError("rank 1 gives up")
    elif how == "exit":
        sys.exit(5)
    elif how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise SystemExit(f"unknown way to leave: {how}")
comm.recv(source=1)
