"""Idup and partitioned requests from several threads at once (MPI_THREAD_MULTIPLE).

Each thread duplicates its own communicator without blocking, then runs rounds of a partitioned
ring on the duplicate; every rank prints one JSON line with what each thread received.
"""

import json
import threading

import numpy as np

from ompy import rc

rc.thread_level = "multiple"

from ompy import MPI  # noqa: E402 (after choosing the thread level)

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
assert MPI.Query_thread() == MPI.THREAD_MULTIPLE
THREADS = 3
parents = [comm.Dup() for _ in range(THREADS)]
results: dict[int, list] = {}


def work(index: int) -> None:
    new, request = parents[index].Idup()
    request.Wait()
    out = np.zeros(6, "i")
    send = new.Psend_init(np.full(6, rank + 10 * index, "i"), 3, (rank + 1) % size, index)
    recv = new.Precv_init(out, 2, (rank - 1) % size, index)
    rounds = []
    for _ in range(5):
        MPI.Prequest.Startall([recv, send])
        send.Pready_list([2, 0, 1])
        MPI.Request.Waitall([send, recv])
        rounds.append(out.tolist())
    results[index] = [new.allreduce(1), rounds[-1], all(r == rounds[0] for r in rounds)]
    send.Free()
    recv.Free()
    new.Free()


threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
for parent in parents:
    parent.Free()
print(json.dumps({"rank": rank, "results": {str(k): v for k, v in results.items()}}), flush=True)
