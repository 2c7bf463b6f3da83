"""Random RMA programs give what a sequential model of the windows says, in every sync mode.

Hypothesis draws a program: a number of ranks and a list of epochs, each a list of operations
``(origin, kind, target, displacement, value)``.  Every rank runs the same program (issuing
the operations whose origin it is) in loopback worlds (one thread per rank), inside epochs of
the mode under test; after each epoch every rank compares its window with the model, and a
barrier keeps the next epoch's operations away until every rank has checked.  The
program keeps to what MPI defines inside one epoch, so the model is exact:

- the window of each rank has a *put region* (``Put``, ``Get``, and ``Put`` through a strided
  target datatype) and an *accumulate region* (``Accumulate`` with ``SUM``, from anyone);
- a put-region location is written by at most one ``Put`` per epoch and never both written
  and read in one epoch, so a ``Get`` returns the value the location had when the epoch began.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.ompi.api.testing import make_world, run_ranks

PUT_SLOTS = 6
ACC_SLOTS = 4
SLOTS = PUT_SLOTS + ACC_SLOTS
STRIDE = 2  # the strided put writes slots d, d + 2, d + 4

MODES = ("fence", "pscw", "lock", "lock_all")

operation = st.tuples(
    st.integers(0, 3),  # origin (taken modulo the world size)
    st.sampled_from(["put", "get", "acc", "put_strided", "rput", "rget"]),
    st.integers(0, 3),  # target (modulo the world size)
    st.integers(0, SLOTS - 1),  # displacement (fitted to the kind's region)
    st.integers(-1000, 1000),  # value
)
programs = st.tuples(
    st.integers(1, 3),
    st.lists(st.lists(operation, max_size=12), min_size=1, max_size=4),
)


def plan(size: int, epochs: list[list[tuple]]) -> list[list[tuple]]:
    """The program's epochs with every operation MPI leaves undefined taken out."""
    result = []
    for raw in epochs:
        written: set[tuple[int, int]] = set()
        read: set[tuple[int, int]] = set()
        kept = []
        for raw_origin, kind, raw_target, raw_disp, value in raw:
            origin, target = raw_origin % size, raw_target % size
            if kind == "acc":
                kept.append((origin, kind, target, PUT_SLOTS + raw_disp % ACC_SLOTS, value))
                continue
            if kind == "put_strided":
                disp = raw_disp % (PUT_SLOTS - 2 * STRIDE)
                slots = [(target, disp + i * STRIDE) for i in range(3)]
            else:
                disp = raw_disp % PUT_SLOTS
                slots = [(target, disp)]
            if any(slot in written for slot in slots):
                continue
            if kind in ("get", "rget"):
                read.update(slots)
            else:
                if any(slot in read for slot in slots):
                    continue
                written.update(slots)
            kept.append((origin, kind, target, disp, value))
        result.append(kept)
    return result


def model(size: int, epochs: list[list[tuple]]) -> tuple[list[np.ndarray], list[dict]]:
    """Each rank's window after each epoch, and what each Get must have read."""
    windows = np.zeros((size, SLOTS), dtype="i8")
    after, reads = [], []
    for ops in epochs:
        start = windows.copy()
        got = {}
        for index, (_origin, kind, target, disp, value) in enumerate(ops):
            if kind in ("put", "rput"):
                windows[target, disp] = value
            elif kind == "put_strided":
                windows[target, [disp, disp + STRIDE, disp + 2 * STRIDE]] = [
                    value,
                    value + 1,
                    value + 2,
                ]
            elif kind == "acc":
                windows[target, disp] += value
            else:
                got[index] = start[target, disp]
        after.append(windows.copy())
        reads.append(got)
    return after, reads


def check_program(comm: MPI.Intracomm, mode: str, epochs: list[list[tuple]]) -> None:
    """Run ``epochs`` on ``comm``'s processes in ``mode``; assert the model after each epoch.

    Used by the loopback runs below and by the multi-process suite (``integration/osc``).
    """
    expected, reads = model(comm.Get_size(), epochs)
    strided = MPI.INT64_T.Create_vector(3, 1, STRIDE).Commit()
    rank = comm.Get_rank()
    win = MPI.Win.Allocate(SLOTS * 8, 8, comm=comm)
    memory = np.frombuffer(win.tomemory(), dtype="i8")
    memory[:] = 0
    group = win.Get_group()
    comm.Barrier()
    for number, ops in enumerate(epochs):
        mine = [(i, op) for i, op in enumerate(ops) if op[0] == rank]
        results: dict[int, np.ndarray] = {}
        requests = []
        if mode == "fence":
            win.Fence()
        elif mode == "pscw":
            win.Post(group)
            win.Start(group)
        elif mode == "lock_all":
            win.Lock_all()
        current = None
        for index, (_, kind, target, disp, value) in mine:
            if mode == "lock" and current != target:
                if current is not None:
                    win.Unlock(current)
                win.Lock(target, MPI.LOCK_SHARED)
                current = target
            if kind == "put":
                win.Put(np.array([value], "i8"), target, disp)
            elif kind == "rput":
                requests.append(win.Rput(np.array([value], "i8"), target, disp))
            elif kind == "put_strided":
                data = np.array([value, value + 1, value + 2], "i8")
                win.Put(data, target, (disp, 1, strided))
            elif kind == "acc":
                win.Accumulate(np.array([value], "i8"), target, disp, MPI.SUM)
            elif kind == "get":
                results[index] = np.full(1, -7, "i8")
                win.Get(results[index], target, disp)
            else:
                results[index] = np.full(1, -7, "i8")
                requests.append(win.Rget(results[index], target, disp))
        MPI.Request.Waitall(requests)
        if mode == "fence":
            win.Fence()
        elif mode == "pscw":
            win.Complete()
            win.Wait()
        elif mode == "lock":
            if current is not None:
                win.Unlock(current)
            comm.Barrier()
        else:
            win.Unlock_all()
            comm.Barrier()
        assert memory.tolist() == expected[number][rank].tolist(), (mode, number, rank)
        for index, got in results.items():
            assert got[0] == reads[number][index], (mode, number, index)
        # Nobody starts the next epoch's operations before every window was checked
        # (a target serves them inside any MPI call, a barrier included).
        comm.Barrier()
    group.Free()
    win.Free()
    strided.Free()


def run_program(mode: str, size: int, epochs: list[list[tuple]]) -> None:
    run_ranks(make_world(size), lambda comm: check_program(comm, mode, epochs), timeout=60)


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=programs)
def test_random_rma_programs_match_the_sequential_model(mode, program):
    size, epochs = program
    run_program(mode, size, plan(size, epochs))
