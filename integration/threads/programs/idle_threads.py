"""Blocked threads on an oversubscribed node must not spin: run with more ranks than cores.

Rank 0 waits IDLE seconds, then sends one message to each of THREADS threads of every other
rank (a buffer to half of them, an object to the others); those threads sit in a blocking
``Recv``/``recv`` meanwhile.  Every rank prints one JSON line: the processor time the process
used during the wait, the wall time it lasted, and what the threads received.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np

from ompy.ompi.api import rc

rc.initialize = False
from ompy import MPI  # noqa: E402

THREADS = 2
IDLE = 3.0


def main() -> None:
    MPI.Init_thread(MPI.THREAD_MULTIPLE)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    comm.Barrier()
    got: dict[int, object] = {}
    cpu, wall = time.process_time(), time.monotonic()
    if rank == 0:
        time.sleep(IDLE)
        for peer in range(1, size):
            for t in range(THREADS):
                if t % 2:
                    comm.send(("object", peer, t), peer, t)
                else:
                    comm.Send(np.array([peer, t], dtype=np.int64), peer, t)
    else:

        def receive(t: int) -> None:
            if t % 2:
                got[t] = comm.recv(source=0, tag=t)
            else:
                buf = np.zeros(2, dtype=np.int64)
                comm.Recv(buf, 0, t)
                got[t] = buf.tolist()

        threads = [threading.Thread(target=receive, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    report = {
        "rank": rank,
        "cpu": time.process_time() - cpu,
        "wall": time.monotonic() - wall,
        "got": {str(t): value for t, value in sorted(got.items())},
    }
    comm.Barrier()
    print(json.dumps(report), flush=True)
    MPI.Finalize()


if __name__ == "__main__":
    main()
