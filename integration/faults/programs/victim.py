"""Rank 1 of four meets the fault named by argv[1]; the job must end promptly (or complete).

``python victim.py FAULT WHERE STATE``.  WHERE is where the ranks meet: ``recv`` (rank 0
sends to rank 1, which forwards to ranks 0, 2 and 3) or ``coll`` (an allreduce).  STATE is
where rank 1 is when the fault strikes:

* ``busy``: rank 1 has not reached its part yet, the other ranks wait for it;
* ``waiting``: rank 1 is itself blocked in the receive or the collective (rank 0 joins
  late), and the fault arrives through a timer signal inside that wait.

Rank 1 prints ``fault at <time.time()>`` and then: ``sigkill`` kills itself, ``sigstop``
stops itself for 5 s (a helper sends SIGCONT) and then plays its part, ``sys.exit3`` calls
``sys.exit(3)``, ``os._exit0`` calls ``os._exit(0)``, ``exception`` raises.  Every rank that
finishes prints ``done``.
"""

import os
import signal
import subprocess
import sys
import time

from ompy import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
fault, where, state = sys.argv[1:4]
#: When the fault strikes, and how late rank 0 joins in the "waiting" state.
FAULT_AFTER, LATE = 0.5, 1.5
comm.Barrier()


def strike(*_signal_args) -> None:
    print(f"fault at {time.time():.6f}", flush=True)
    if fault == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "sigstop":
        subprocess.Popen(["sh", "-c", f"sleep 5; kill -CONT {os.getpid()}"])
        os.kill(os.getpid(), signal.SIGSTOP)
    elif fault == "sys.exit3":
        sys.exit(3)
    elif fault == "os._exit0":
        os._exit(0)
    elif fault == "exception":
        raise RuntimeError("deliberate fault in rank 1")
    else:
        raise SystemExit(f"unknown fault {fault!r}")


def play_part() -> None:
    if where == "recv":
        if rank == 1:
            message = comm.recv(source=0)
            for peer in (0, 2, 3):
                comm.send(message, dest=peer)
        elif rank == 0:
            comm.send("from rank 0", dest=1)
            comm.recv(source=1)
        else:
            comm.recv(source=1)
    else:
        assert comm.allreduce(rank) == 6


if rank == 1 and state == "busy":
    time.sleep(FAULT_AFTER)  # the others are waiting by now
    strike()
elif rank == 1:
    signal.signal(signal.SIGALRM, strike)
    signal.setitimer(signal.ITIMER_REAL, FAULT_AFTER)  # inside play_part's wait
elif rank == 0 and state == "waiting":
    time.sleep(LATE)
play_part()
print(f"rank {rank} done", flush=True)
