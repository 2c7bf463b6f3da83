"""Rank 1 ends in the way argv[1] names while the other ranks wait for it (or end normally).

``python exits.py HOW [WHERE]``: WHERE is ``recv`` (the others wait in a receive from rank 1,
rank 0 directly, the rest on rank 0) or ``coll`` (they wait in an allreduce).  HOW:

* ``sys.exit3``, ``sys.exit0``: rank 1 calls ``sys.exit(3)`` / ``sys.exit(0)``;
* ``os._exit0``: rank 1 calls ``os._exit(0)``;
* ``finalize-raises``: rank 1's implicit Finalize at exit raises;
* ``atexit-exit0``: an atexit handler of rank 1 calls ``os._exit(0)`` before MPI finalizes;
* ``all-exit0``, ``all-exit4``: every rank calls ``sys.exit`` after a barrier (a normal end);
* ``finalize-first``: every rank but 1 calls ``MPI.Finalize()``, then rank 1 ``sys.exit(0)``;
* ``secret``: every rank reports whether ``OMPY_SECRET`` is visible to it and to a child.
"""

import atexit
import os
import subprocess
import sys
import time

from ompy import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
how = sys.argv[1]
where = sys.argv[2] if len(sys.argv) > 2 else "coll"
comm.Barrier()

if how.startswith("all-exit"):
    sys.exit(int(how[len("all-exit") :]))
if how == "finalize-first":
    if rank != 1:
        MPI.Finalize()
    else:
        time.sleep(0.3)
    sys.exit(0)
if how == "secret":
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ.get('OMPY_SECRET'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    total = comm.allreduce(1)  # the job still works without the variable
    print(f"rank {rank}: environ={os.environ.get('OMPY_SECRET')} child={child.stdout.strip()}")
    print(f"rank {rank}: total={total}", flush=True)
    sys.exit(0)

if rank == 1:
    time.sleep(0.2)
    print(f"rank 1: event {how} at {time.time():.6f}", flush=True)
    if how == "sys.exit3":
        sys.exit(3)
    elif how == "sys.exit0":
        sys.exit(0)
    elif how == "os._exit0":
        os._exit(0)
    elif how == "finalize-raises":
        from ompy.ompi.api import init

        def broken(communicator):
            raise RuntimeError("deliberate failure in Finalize")

        init.barrier = broken  # the program ends: the implicit Finalize runs, and raises
    elif how == "atexit-exit0":
        atexit.register(os._exit, 0)  # runs before MPI's finalize at exit
    else:
        raise SystemExit(f"unknown HOW {how!r}")
elif where == "recv":
    comm.recv(source=1 if rank == 0 else 0)
else:
    comm.allreduce(rank)
