"""Concurrent atomic counters: every rank increments, no increment is ever lost.

Each rank adds 1 to a counter on rank 0 (and on its right neighbour) many times with
``Fetch_and_op``, under a shared lock per increment, under ``Lock_all`` with flushes, and
with ``Compare_and_swap`` retry loops.  The fetched values of all ranks together must be
exactly ``0 .. total-1``, each once, and the counter must end at ``total``.
"""

from __future__ import annotations

import numpy as np
import pytest

from ompy import MPI
from ompy.ompi.api.testing import make_world, run_ranks

INCREMENTS = 40


def count(comm: MPI.Intracomm, style: str) -> list[int]:
    """Increment rank 0's counter ``INCREMENTS`` times in ``style``: [final value, fetched...].

    Used by the loopback runs below and by the multi-process suite (``integration/osc``).
    """
    win = MPI.Win.Allocate(8, 8, comm=comm)
    counter = np.frombuffer(win.tomemory(), dtype="i8")
    counter[:] = 0
    comm.Barrier()
    one = np.ones(1, "i8")
    seen = []
    fetched = np.zeros(1, "i8")
    if style == "lock_all":
        win.Lock_all()
    for _ in range(INCREMENTS):
        if style == "lock":
            win.Lock(0, MPI.LOCK_SHARED)
            win.Fetch_and_op(one, fetched, 0, 0, MPI.SUM)
            win.Unlock(0)
        elif style == "lock_all":
            win.Fetch_and_op(one, fetched, 0, 0, MPI.SUM)
            win.Flush(0)
        else:  # compare-and-swap until it sticks
            win.Lock(0, MPI.LOCK_SHARED)
            old = np.zeros(1, "i8")
            win.Fetch_and_op(None, old, 0, 0, MPI.NO_OP)
            win.Flush(0)
            while True:
                win.Compare_and_swap(old + 1, old, fetched, 0, 0)
                win.Flush(0)
                if fetched[0] == old[0]:
                    break
                old[:] = fetched
            win.Unlock(0)
        seen.append(int(fetched[0]))
    if style == "lock_all":
        win.Unlock_all()
    comm.Barrier()
    final = int(counter[0])
    win.Free()
    return [final, *seen]


def counter_job(size: int, style: str) -> list[list[int]]:
    return run_ranks(make_world(size), lambda comm: count(comm, style), timeout=120)


@pytest.mark.parametrize("size", [1, 2, 4])
@pytest.mark.parametrize("style", ["lock", "lock_all", "cas"])
def test_concurrent_fetch_and_op_never_loses_an_increment(size, style):
    results = counter_job(size, style)
    total = size * INCREMENTS
    assert results[0][0] == total
    fetched = sorted(value for result in results for value in result[1:])
    assert fetched == list(range(total))
    for result in results:  # each rank's own increments are in increasing order
        assert result[1:] == sorted(result[1:])
