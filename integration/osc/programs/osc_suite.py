"""The RMA suite of one ``ompy run`` job: run as ``ompy run -n N python osc_suite.py``.

Every rank runs, on ``COMM_WORLD``:

- seeded random RMA programs (the generator and the sequential model of
  ``packages/components/osc-pt2pt/tests/test_rma_model.py``) in each sync mode: fence, PSCW,
  lock, lock_all;
- the concurrent counters of ``test_counters.py`` (Fetch_and_op under Lock, under Lock_all
  with flushes, and a Compare_and_swap retry loop): no increment lost;
- a passive-target exchange where the target sits in a blocking receive while the origins
  lock, write and unlock: the target serves them from inside that receive.

Each rank prints one JSON line: its rank and the names of the checks that passed (a failing
check raises, which ends the job with the traceback).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "packages/components/osc-pt2pt/tests"))

from test_counters import INCREMENTS, count
from test_rma_model import ACC_SLOTS, SLOTS, check_program, plan

from ompy import MPI

KINDS = ["put", "get", "acc", "put_strided", "rput", "rget"]


def random_epochs(seed: int, size: int) -> list[list[tuple]]:
    rng = random.Random(seed)
    epochs = []
    for _ in range(rng.randint(2, 5)):
        ops = [
            (
                rng.randrange(4),
                rng.choice(KINDS),
                rng.randrange(4),
                rng.randrange(SLOTS + ACC_SLOTS),
                rng.randint(-1000, 1000),
            )
            for _ in range(rng.randint(0, 16))
        ]
        epochs.append(ops)
    return plan(size, epochs)


def served_inside_a_receive(comm: MPI.Intracomm) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    win = MPI.Win.Allocate(8 * size, 8, comm=comm)
    memory = np.frombuffer(win.tomemory(), dtype="i8")
    memory[:] = -1
    comm.Barrier()
    if rank == 0:
        # Blocked in a receive that only comes once every origin's Unlock returned.
        for _ in range(size - 1):
            comm.recv(source=MPI.ANY_SOURCE, tag=7)
        assert memory[1:].tolist() == [10 * r for r in range(1, size)], memory.tolist()
    else:
        win.Lock(0, MPI.LOCK_EXCLUSIVE)
        win.Put(np.array([10 * rank], "i8"), 0, rank)
        win.Unlock(0)
        comm.send(None, dest=0, tag=7)
    comm.Barrier()
    win.Free()


def main() -> None:
    comm = MPI.COMM_WORLD
    size = comm.Get_size()
    passed = []
    for mode in ("fence", "pscw", "lock", "lock_all"):
        for seed in range(6):
            check_program(comm, mode, random_epochs(1000 * size + seed, size))
        passed.append(f"model {mode}")
    for style in ("lock", "lock_all", "cas"):
        result = count(comm, style)
        everything = comm.allgather(result[1:])
        fetched = sorted(value for values in everything for value in values)
        assert fetched == list(range(size * INCREMENTS)), (style, fetched)
        if comm.Get_rank() == 0:
            assert result[0] == size * INCREMENTS, (style, result[0])
        passed.append(f"counter {style}")
    served_inside_a_receive(comm)
    passed.append("served inside a receive")
    print(json.dumps({"rank": comm.Get_rank(), "passed": passed}), flush=True)


if __name__ == "__main__":
    main()
