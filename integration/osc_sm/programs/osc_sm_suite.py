"""Windows in shared memory through the MPI API: every synchronisation mode, in one job.

Usage: ``ompy run -n N python osc_sm_suite.py [SEED]``.  Windows over the world, over both
halves of a split at once and over COMM_SELF check: which component serves them (sm), that no
segment is still named once the window exists, ``Allocate_shared`` memory (sizes
differing per rank, one rank with none, contiguous or not) read and written with plain loads
and stores through ``Shared_query``, ``Win.Allocate`` windows, concurrent ``Fetch_and_op``
counters, a ``Compare_and_swap`` spin lock guarding a non-atomic update, derived datatypes on
the target, and random RMA programs against a sequential model in fence, PSCW, lock and
lock_all epochs.  Rank 0 prints one JSON line: the number of checks per section and rank.
"""

from __future__ import annotations

import json
import os
import random
import sys
from collections import Counter

import numpy as np

from ompy import MPI

world = MPI.COMM_WORLD
SEED = int(sys.argv[1]) if len(sys.argv) > 1 else 1
checks: Counter[str] = Counter()


def check(section: str, ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(f"rank {world.Get_rank()}: {section}: {what}")
    checks[section] += 1


def served_by_sm(win: MPI.Win) -> None:
    window = win._live("suite")
    check("provider", window.module.component == "sm", f"served by {window.module.component}")
    path = window.module.segment.descriptor.path
    check("unlinked", not os.path.exists(path), f"the window's segment is still named: {path}")


def shared(comm: MPI.Intracomm, noncontig: bool) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    count = 0 if rank == size - 1 and size > 1 else rank + 2  # the last rank has no memory
    info = MPI.Info.Create()
    if noncontig:
        info.Set("alloc_shared_noncontig", "true")
    win = MPI.Win.Allocate_shared(8 * count, 8, info, comm)
    info.Free()
    served_by_sm(win)
    check("shared", win.Get_attr(MPI.WIN_CREATE_FLAVOR) == MPI.WIN_FLAVOR_SHARED, "flavor")
    check("shared", win.Get_attr(MPI.WIN_MODEL) == MPI.WIN_UNIFIED, "model")
    mine = np.frombuffer(win.tomemory(), np.int64)
    check("shared", mine.size == count, f"{mine.size} elements, not {count}")
    win.Lock_all()
    mine[:] = 1000 * rank + np.arange(count)
    win.Sync()
    comm.Barrier()
    win.Sync()
    addresses = []
    for peer in range(size):
        memory, unit = win.Shared_query(peer)
        peer_count = 0 if peer == size - 1 and size > 1 else peer + 2
        check("shared", unit == 8 and len(memory) == 8 * peer_count, f"query {peer}")
        values = np.frombuffer(memory, np.int64)
        check("shared", list(values) == [1000 * peer + i for i in range(peer_count)], "loads")
        addresses.append((MPI.Get_address(memory), len(memory)))
    for peer in range(1, size):
        if not addresses[peer][1]:
            continue
        if noncontig:
            check("shared", addresses[peer][0] % 4096 == 0, "page-aligned parts")
        elif addresses[peer - 1][1]:
            follows = addresses[peer][0] == addresses[peer - 1][0] + addresses[peer - 1][1]
            check("shared", follows, f"rank {peer}'s part does not follow rank {peer - 1}'s")
    first, _ = win.Shared_query(MPI.PROC_NULL)
    check("shared", MPI.Get_address(first) == addresses[0][0], "PROC_NULL: rank 0's part")
    del first, memory, values
    win.Unlock_all()
    comm.Barrier()
    del mine
    win.Free()


def allocate(comm: MPI.Intracomm) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    win = MPI.Win.Allocate(8 * 4, 8, comm=comm)
    served_by_sm(win)
    right = (rank + 1) % size
    win.Fence()
    win.Put(np.full(2, rank, np.int64), right, (1, 2, MPI.INT64_T))
    win.Fence()
    got = np.zeros(4, np.int64)
    win.Get(got, rank)
    win.Fence()
    left = (rank - 1) % size
    check("allocate", list(got) == [0, left, left, 0], f"got {list(got)}")
    # derived datatype on the target: every other element
    vector = MPI.INT64_T.Create_vector(2, 1, 2).Commit()
    win.Put(np.array([7, 9], np.int64), right, (0, 1, vector))
    win.Fence()
    win.Accumulate(np.array([1, 1], np.int64), right, (0, 1, vector), MPI.SUM)
    win.Fence()
    win.Get(got, rank)
    win.Fence(MPI.MODE_NOSUCCEED)
    check("derived", list(got) == [8, left, 10, 0], f"got {list(got)}")
    vector.Free()
    win.Free()


def counter(comm: MPI.Intracomm, rounds: int) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    win = MPI.Win.Allocate_shared(8 if rank == 0 else 0, 8, comm=comm)
    seen = []
    one = np.ones(1, np.int64)
    win.Lock_all()
    for _ in range(rounds):
        old = np.zeros(1, np.int64)
        win.Fetch_and_op(one, old, 0, 0, MPI.SUM)
        win.Flush(0)
        seen.append(int(old[0]))
    win.Unlock_all()
    everyone = sorted(v for values in comm.allgather(seen) for v in values)
    check("counter", everyone == list(range(size * rounds)), "an increment was lost")
    comm.Barrier()
    if rank == 0:
        value = int(np.frombuffer(win.tomemory(), np.int64)[0])
        check("counter", value == size * rounds, f"counter {value}")
    win.Free()


def spin_lock(comm: MPI.Intracomm, rounds: int) -> None:
    """A mutex from Compare_and_swap guards a read-modify-write made of Get and Put."""
    rank, size = comm.Get_rank(), comm.Get_size()
    win = MPI.Win.Allocate_shared(16 if rank == 0 else 0, 8, comm=comm)
    mine, free, result = np.array([rank + 1]), np.zeros(1, np.int64), np.zeros(1, np.int64)
    win.Lock_all()
    for _ in range(rounds):
        while True:
            win.Compare_and_swap(mine.astype(np.int64), free, result, 0, 0)
            win.Flush(0)
            if result[0] == 0:
                break
        value = np.zeros(1, np.int64)
        win.Get(value, 0, (1, 1, MPI.INT64_T))
        win.Flush(0)
        win.Put(value + 1, 0, (1, 1, MPI.INT64_T))
        win.Flush(0)
        win.Compare_and_swap(free, mine.astype(np.int64), result, 0, 0)
        win.Flush(0)
        check("cas", result[0] == rank + 1, "the lock was not ours")
    win.Unlock_all()
    comm.Barrier()
    if rank == 0:
        total = int(np.frombuffer(win.tomemory(), np.int64)[1])
        check("cas", total == size * rounds, f"{total} updates, not {size * rounds}")
    win.Free()


OWN, SHARED = 3, 4


def model_programs(comm: MPI.Intracomm, seed: int, programs: int) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    slots = size * OWN + SHARED
    for number in range(programs):
        mode = ("fence", "pscw", "lock", "lock_all")[number % 4]
        rng = random.Random(seed * 1000 + number)  # every rank draws the same program
        epochs = []
        for _ in range(rng.randint(1, 4)):
            epoch = []
            for _origin in range(size):
                epoch.append(
                    [
                        (
                            rng.choice(("put", "acc", "fop", "get")),
                            rng.randrange(size),
                            rng.randrange(OWN),
                            rng.randrange(SHARED),
                            rng.randrange(slots),
                            rng.randint(-50, 50),
                        )
                        for _ in range(rng.randint(0, 5))
                    ]
                )
            epochs.append(epoch)
        memory = np.zeros((size, slots), np.int64)
        win = MPI.Win.Allocate(8 * slots, 8, comm=comm)
        everyone = comm.Get_group()
        for epoch in epochs:
            start = memory.copy()
            changed, puts, plan, gets = set(), set(), [], []
            for origin, ops in enumerate(epoch):
                for kind, target, own, common, _slot, _value in ops:
                    if kind == "put":
                        changed.add((target, origin * OWN + own))
                    elif kind in ("acc", "fop"):
                        changed.add((target, size * OWN + common))
            for origin, ops in enumerate(epoch):
                for kind, target, own, common, slot, value in ops:
                    if kind == "put":
                        if (origin, target, own) in puts:
                            continue
                        puts.add((origin, target, own))
                        memory[target, origin * OWN + own] = value
                    elif kind in ("acc", "fop"):
                        memory[target, size * OWN + common] += value
                    elif (target, slot) in changed:
                        continue
                    if origin == rank:
                        plan.append((kind, target, own, common, slot, value))
            if mode == "fence":
                win.Fence()
            elif mode == "pscw":
                win.Post(everyone)
                win.Start(everyone)
            elif mode == "lock_all":
                win.Lock_all()
            for kind, target, own, common, slot, value in plan:
                if mode == "lock":
                    win.Lock(target, MPI.LOCK_SHARED)
                data = np.array([value], np.int64)
                if kind == "put":
                    win.Put(data, target, (rank * OWN + own, 1, MPI.INT64_T))
                elif kind == "acc":
                    win.Accumulate(data, target, (size * OWN + common, 1, MPI.INT64_T), MPI.SUM)
                elif kind == "fop":
                    win.Fetch_and_op(data, np.zeros(1, np.int64), target, size * OWN + common)
                else:
                    out = np.full(1, -999, np.int64)
                    win.Get(out, target, (slot, 1, MPI.INT64_T))
                    gets.append((out, int(start[target, slot])))  # read once the epoch ends
                if mode == "lock":
                    win.Unlock(target)
            if mode == "fence":
                win.Fence()
            elif mode == "pscw":
                win.Complete()
                win.Wait()
            else:
                if mode == "lock_all":
                    win.Unlock_all()
                comm.Barrier()
            for out, expected in gets:
                check("model", int(out[0]) == expected, f"{mode}: get {int(out[0])} != {expected}")
        if mode == "fence":
            win.Fence(MPI.MODE_NOSUCCEED)
        win.Lock(rank, MPI.LOCK_SHARED)
        mine = np.frombuffer(win.tomemory(), np.int64).copy()
        win.Unlock(rank)
        check(
            "model",
            list(mine) == list(memory[rank]),
            f"{mode}: {list(mine)} != {list(memory[rank])}",
        )
        everyone.Free()
        comm.Barrier()
        win.Free()


def battery(comm: MPI.Intracomm) -> None:
    shared(comm, noncontig=False)
    shared(comm, noncontig=True)
    allocate(comm)
    counter(comm, 150)
    spin_lock(comm, 20)
    model_programs(comm, SEED, 8)


rank = world.Get_rank()
battery(world)
battery(MPI.COMM_SELF)
half = world.Split(rank % 2, rank)
battery(half)
half.Free()
report = world.gather(dict(checks))
if rank == 0:
    print(json.dumps({"ranks": world.Get_size(), "checks": report}))
