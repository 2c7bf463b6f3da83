"""``MPI.Win`` on the pt2pt component: creation, attributes, every RMA call, every error.

In-process loopback worlds (one thread per rank); the multi-process runs over sm and tcp are
in ``integration/osc``.
"""

from __future__ import annotations

import numpy as np
import pytest

from ompy import MPI
from ompy.ompi.api.testing import default_instance, make_world, run_ranks


def on_ranks(size, body):
    return run_ranks(make_world(size), body, timeout=60)


def rma_error(call) -> int:
    with pytest.raises(MPI.Exception) as caught:
        call()
    return caught.value.Get_error_class()


# -- creation and what a window says about itself ---------------------------------------------


def test_allocate_create_and_their_attributes():
    def body(comm):
        rank = comm.rank
        win = MPI.Win.Allocate(16 * (rank + 1), 4, comm=comm)
        assert win.Get_attr(MPI.WIN_SIZE) == 16 * (rank + 1)
        assert win.Get_attr(MPI.WIN_DISP_UNIT) == 4
        assert win.Get_attr(MPI.WIN_CREATE_FLAVOR) == MPI.WIN_FLAVOR_ALLOCATE == win.flavor
        assert win.Get_attr(MPI.WIN_MODEL) == MPI.WIN_UNIFIED == win.model
        memory = win.tomemory()
        assert len(memory) == 16 * (rank + 1)
        assert win.Get_attr(MPI.WIN_BASE) == memory.address
        assert win.attrs == (memory.address, 16 * (rank + 1), 4)
        assert (win.group_size, win.group_rank) == (comm.size, rank)
        group = win.Get_group()
        assert MPI.Group.Compare(group, comm.Get_group()) == MPI.IDENT
        group.Free()
        assert win.Get_name() == ""
        win.Set_name("cells")
        assert win.name == "cells" and "cells" in repr(win)
        win.Free()
        assert win == MPI.WIN_NULL and not win

        array = np.arange(5, dtype="i4")
        win = MPI.Win.Create(array, 4, comm=comm)
        assert win.flavor == MPI.WIN_FLAVOR_CREATE
        assert win.Get_attr(MPI.WIN_BASE) == MPI.Get_address(array)
        assert win.Get_attr(MPI.WIN_SIZE) == array.nbytes
        win.Fence()
        win.Put(np.array([100 + rank], "i4"), (rank + 1) % comm.size, rank)
        win.Fence()
        win.Free()
        return array.tolist()

    results = on_ranks(3, body)
    for rank, values in enumerate(results):
        writer = (rank - 1) % 3
        expected = list(range(5))
        expected[writer] = 100 + writer
        assert values == expected


def test_info_names_handles_and_user_attributes():
    deleted = []

    def body(comm):
        info = MPI.Info.Create()
        info.Set("no_locks", "true")
        win = MPI.Win.Allocate(8, comm=comm, info=info)
        info.Free()
        got = win.Get_info()
        assert got.Get("no_locks") == "true"
        got.Free()
        hints = MPI.Info.Create({"accumulate_ordering": "none"})
        win.info = hints
        hints.Free()
        got = win.info
        assert got.Get("accumulate_ordering") == "none"
        got.Free()
        # (fromint looks in this interpreter's default instance, not a loopback rank's)
        assert isinstance(win.toint(), int) and win.toint() == win.toint()
        keyval = MPI.Win.Create_keyval(delete_fn=lambda w, k, v: deleted.append(v))
        win.Set_attr(keyval, comm.rank)
        assert win.Get_attr(keyval) == comm.rank
        with pytest.raises(MPI.Exception):
            win.Set_attr(MPI.WIN_BASE, 1)
        win.Free()
        MPI.Win.Free_keyval(keyval)

    with default_instance():  # keyvals live in the default instance, as MPI's are global
        on_ranks(2, body)
    assert sorted(deleted) == [0, 1]


def test_bad_creation_arguments_are_named():
    (comm,) = make_world(1)
    with pytest.raises(MPI.Exception) as caught:
        MPI.Win.Allocate(-1, comm=comm)
    assert caught.value.Get_error_class() == MPI.ERR_SIZE
    with pytest.raises(MPI.Exception) as caught:
        MPI.Win.Allocate(8, 0, comm=comm)
    assert caught.value.Get_error_class() == MPI.ERR_DISP
    with pytest.raises(TypeError, match="read-only"):
        MPI.Win.Create(b"abc", comm=comm)
    with pytest.raises(TypeError, match="Intracomm"):
        MPI.Win.Allocate(8, comm="world")


def test_calls_on_a_freed_window_raise_err_win():
    def body(comm):
        win = MPI.Win.Allocate(8, comm=comm)
        handle = MPI.Win(win)
        win.Free()
        with pytest.raises(MPI.Exception) as caught:
            handle.Fence()
        assert caught.value.Get_error_class() == MPI.ERR_WIN
        assert "WIN_NULL" in str(caught.value)

    on_ranks(1, body)


def test_lowercase_free_skips_null_windows_as_mpi4py_does():
    """``free()`` frees a live window and does nothing to WIN_NULL or a freed one (``Free()``
    raises there); a window with an epoch open is still refused."""

    def body(comm):
        MPI.WIN_NULL.free()
        win = MPI.Win.Allocate(8, comm=comm)
        win.free()
        assert not win
        win.free()
        with pytest.raises(MPI.Exception) as caught:
            win.Free()
        assert caught.value.Get_error_class() == MPI.ERR_WIN
        busy = MPI.Win.Allocate(8, comm=comm)
        busy.Lock(0)
        with pytest.raises(MPI.Exception) as caught:
            busy.free()
        assert caught.value.Get_error_class() == MPI.ERR_RMA_SYNC
        busy.Unlock(0)
        busy.free()

    on_ranks(1, body)


# -- operations -------------------------------------------------------------------------------


def test_fetching_operations_and_their_ops():
    def body(comm):
        rank, size = comm.rank, comm.size
        win = MPI.Win.Allocate(8 * 4, 8, comm=comm)
        memory = np.frombuffer(win.tomemory(), dtype="f8")
        memory[:] = [1.0, 2.0, 3.0, 4.0]
        comm.Barrier()
        target = (rank + 1) % size
        win.Lock(target, MPI.LOCK_EXCLUSIVE)
        result = np.zeros(2)
        win.Get_accumulate(np.array([10.0, 20.0]), result, target, 0, MPI.REPLACE)
        win.Flush(target)
        assert result.tolist() == [1.0, 2.0]
        fetched = np.zeros(1)
        win.Fetch_and_op(None, fetched, target, 0, MPI.NO_OP)
        win.Flush(target)
        assert fetched[0] == 10.0
        win.Fetch_and_op(np.array([5.0]), fetched, target, 3, MPI.MAX)
        win.Flush_local(target)
        assert fetched[0] == 4.0
        request = win.Rget_accumulate(
            np.array([1.0]), fetched, target, (2, 1, MPI.DOUBLE), MPI.PROD
        )
        request.Wait()
        assert fetched[0] == 3.0
        win.Raccumulate(np.array([2.0]), target, 2, MPI.PROD).Wait()
        win.Get(fetched, target, 2)
        win.Flush_all()
        assert fetched[0] == 6.0
        swapped = np.zeros(1)
        win.Compare_and_swap(np.array([-1.0]), np.array([20.0]), swapped, target, 1)
        win.Flush_local_all()
        assert swapped[0] == 20.0
        win.Unlock(target)
        comm.Barrier()
        values = memory.tolist()
        win.Free()
        return values

    for values in on_ranks(3, body):
        assert values == [10.0, -1.0, 6.0, 5.0]


def test_derived_datatypes_on_origin_and_target():
    def body(comm):
        rank, size = comm.rank, comm.size
        win = MPI.Win.Allocate(4 * 12, 4, comm=comm)
        memory = np.frombuffer(win.tomemory(), dtype="i4")
        memory[:] = np.arange(12) + 100 * rank
        column = MPI.INT.Create_vector(3, 1, 4).Commit()
        win.Fence()
        target = (rank + 1) % size
        got = np.zeros((3, 2), dtype="i4")
        # a strided origin (a numpy column) from a strided target (every 4th int from 1)
        win.Get(got[:, 1], target, (1, 1, column))
        win.Fence()
        win.Put(np.array([[-1, 7], [-2, 8], [-3, 9]], "i4")[:, 1], target, (2, 1, column))
        win.Accumulate(np.array([1000, 1000, 1000], "i4"), target, (3, 1, column), MPI.SUM)
        win.Fence()
        column.Free()
        result = got[:, 1].tolist(), memory.tolist()
        win.Free()
        return result

    results = on_ranks(2, body)
    for rank, (got, memory) in enumerate(results):
        source = (rank + 1) % 2
        assert got == [100 * source + 1, 100 * source + 5, 100 * source + 9]
        expected = list(np.arange(12) + 100 * rank)
        for i, value in zip((2, 6, 10), (7, 8, 9), strict=True):
            expected[i] = value
        for i in (3, 7, 11):
            expected[i] += 1000
        assert memory == expected


def test_dynamic_windows_use_absolute_addresses():
    def body(comm):
        rank, size = comm.rank, comm.size
        win = MPI.Win.Create_dynamic(comm=comm)
        assert win.flavor == MPI.WIN_FLAVOR_DYNAMIC and win.Get_attr(MPI.WIN_SIZE) == 0
        region = MPI.Alloc_mem(8 * 4)
        cells = np.frombuffer(region, dtype="i8")
        cells[:] = rank
        win.Attach(region)
        with pytest.raises(MPI.Exception) as caught:
            win.Attach(region)
        assert caught.value.Get_error_class() == MPI.ERR_RMA_ATTACH
        addresses = comm.allgather(MPI.Get_address(region))
        target = (rank + 1) % size
        win.Lock_all()
        win.Put(np.array([50 + rank], "i8"), target, addresses[target] + 8)
        got = np.zeros(1, "i8")
        win.Get(got, target, addresses[target] + 24)
        win.Unlock_all()
        comm.Barrier()
        values = cells.tolist()
        win.Detach(region)
        with pytest.raises(MPI.Exception) as caught:
            win.Detach(region)
        assert caught.value.Get_error_class() == MPI.ERR_RMA_ATTACH
        win.Free()
        MPI.Free_mem(region)
        return values, int(got[0])

    results = on_ranks(3, body)
    for rank, (values, got) in enumerate(results):
        assert values == [rank, 50 + (rank - 1) % 3, rank, rank]
        assert got == (rank + 1) % 3


def test_proc_null_targets_do_nothing():
    def body(comm):
        win = MPI.Win.Allocate(8, comm=comm)
        memory = np.frombuffer(win.tomemory(), dtype="i8")
        memory[:] = 3
        # PROC_NULL needs no epoch, as in MPI
        win.Put(np.array([9], "i8"), MPI.PROC_NULL)
        result = np.array([-1], "i8")
        win.Fetch_and_op(np.array([1], "i8"), result, MPI.PROC_NULL)
        request = win.Rget(result, MPI.PROC_NULL)
        assert request.Test()
        win.Lock(MPI.PROC_NULL)
        win.Unlock(MPI.PROC_NULL)
        assert memory[0] == 3 and result[0] == -1
        win.Free()

    on_ranks(1, body)


def test_pscw_test_turns_true_once_every_origin_completed():
    def body(comm):
        rank = comm.rank
        win = MPI.Win.Allocate(8, 8, comm=comm)
        memory = np.frombuffer(win.tomemory(), dtype="i8")
        memory[:] = 0
        world = comm.Get_group()
        if rank == 0:
            origins = world.Incl([1])
            win.Post(origins)
            comm.Barrier()  # rank 1 has not completed yet
            assert not win.Test()
            comm.Barrier()
            while not win.Test():
                pass
            assert memory[0] == 42
            origins.Free()
        else:
            targets = world.Incl([0])
            win.Start(targets)
            win.Put(np.array([42], "i8"), 0)
            comm.Barrier()
            comm.Barrier()
            win.Complete()
            targets.Free()
        world.Free()
        win.Free()

    on_ranks(2, body)


# -- errors -----------------------------------------------------------------------------------


def test_epoch_errors_raise_err_rma_sync():
    def body(comm):
        win = MPI.Win.Allocate(8, 8, comm=comm)
        one = np.ones(1, "i8")
        assert rma_error(lambda: win.Put(one, 0)) == MPI.ERR_RMA_SYNC
        assert rma_error(win.Complete) == MPI.ERR_RMA_SYNC
        assert rma_error(win.Wait) == MPI.ERR_RMA_SYNC
        assert rma_error(lambda: win.Unlock(0)) == MPI.ERR_RMA_SYNC
        assert rma_error(win.Unlock_all) == MPI.ERR_RMA_SYNC
        assert rma_error(lambda: win.Flush(0)) == MPI.ERR_RMA_SYNC
        win.Lock(0)
        assert rma_error(lambda: win.Lock(0)) == MPI.ERR_RMA_SYNC
        assert rma_error(win.Fence) == MPI.ERR_RMA_SYNC
        assert rma_error(win.Free) == MPI.ERR_RMA_SYNC
        win.Unlock(0)
        win.Fence()
        win.Put(one, 0)
        win.Fence(MPI.MODE_NOSUCCEED)
        assert rma_error(lambda: win.Put(one, 0)) == MPI.ERR_RMA_SYNC
        assert rma_error(lambda: win.Fence(1 << 9)) == MPI.ERR_ARG
        win.Free()

    on_ranks(1, body)


def test_argument_and_range_errors():
    def body(comm):
        # Win.Create: a window pt2pt serves even where osc sm is installed (sm takes Allocate
        # windows and reports a range error at the call, not at the next synchronisation)
        win = MPI.Win.Create(bytearray(16), 8, comm=comm)
        one = np.ones(1, "i8")
        win.Fence()
        assert rma_error(lambda: win.Put(one, 5)) == MPI.ERR_RANK
        assert rma_error(lambda: win.Put(one, 0, -1)) == MPI.ERR_DISP
        assert rma_error(lambda: win.Put(one, 0, (0, 2))) == MPI.ERR_TYPE  # size mismatch
        assert rma_error(lambda: win.Accumulate(one, 0, (0, 2, MPI.INT))) == MPI.ERR_TYPE
        with pytest.raises(ValueError, match="3 items"):
            win.Put(one, 0, (0, 1, MPI.INT64_T, 4))
        with pytest.raises(ValueError, match="single element"):
            win.Fetch_and_op(np.ones(2, "i8"), np.ones(2, "i8"), 0)
        with pytest.raises(TypeError, match=r"MPI\.Op"):
            win.Accumulate(one, 0, 0, "sum")
        # beyond the target's memory: the target refuses, the origin hears at the fence
        win.Put(one, 0, 2)
        assert rma_error(win.Fence) == MPI.ERR_RMA_RANGE
        request = win.Rget(one, 0, 7)
        assert rma_error(request.Wait) == MPI.ERR_RMA_RANGE
        assert rma_error(win.Fence) == MPI.ERR_RMA_RANGE
        own, unit = win.Shared_query(0)  # MPI 4.1: its own memory, for any window
        assert (own.address, len(own), unit) == (win.tomemory().address, 16, 8)
        win.Fence()
        win.Free()

    on_ranks(1, body)


def test_window_error_handlers():
    calls = []

    def body(comm):
        win = MPI.Win.Allocate(8, comm=comm)
        assert win.Get_errhandler() == MPI.ERRORS_RETURN
        handler = MPI.Win.Create_errhandler(lambda w, code: calls.append((w.name, code)))
        win.Set_name("counted")
        win.Set_errhandler(handler)
        with pytest.raises(MPI.Exception):
            win.Complete()
        win.Call_errhandler(MPI.ERR_OTHER)
        win.Set_errhandler(MPI.ERRORS_RETURN)
        handler.Free()
        win.Free()

    on_ranks(1, body)
    assert calls == [("counted", MPI.ERR_RMA_SYNC), ("counted", MPI.ERR_OTHER)]


def test_what_mpi4py_programs_rely_on():
    """Behaviours mpi4py's own test suite checks (test_win.py, test_rma.py)."""
    assert MPI.WIN_NULL.Get_name() == "MPI_WIN_NULL"

    def body(comm):
        win = MPI.Win.Allocate(8, 1, comm=comm)
        win.Fence()  # a fence followed by no RMA call opens no epoch: a lock may follow
        win.Lock(0)
        nothing = MPI.Alloc_mem(1)
        # zero elements of a type SUM does not apply to: nothing to do, no error
        win.Get_accumulate([nothing, 0, MPI.BYTE], [nothing, 0, MPI.BYTE], 0)
        win.Accumulate([nothing, 0, MPI.BYTE], 0)
        win.Unlock(0)
        MPI.Free_mem(nothing)
        win.Free()
        dynamic = MPI.Win.Create_dynamic(comm=comm)
        memory = dynamic.tomemory()  # MPI_BOTTOM: attached memory is addressed absolutely
        assert (MPI.Get_address(memory), len(memory)) == (0, 0)
        assert dynamic.Get_attr(MPI.WIN_BASE) == 0
        other, unit = dynamic.Shared_query(0)
        assert len(other) == 0 and unit == 1
        dynamic.Free()

    on_ranks(2, body)
