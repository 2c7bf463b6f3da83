"""The module's operations on 1..5 simulated ranks against numpy references.

Small fragments (one page) make every message of a few pages cross fragment and pipeline
boundaries, so the multi-fragment paths run on small data.
"""

from __future__ import annotations

import numpy as np
import pytest

from ompy import MPI
from ompy.ompi.datatype.buffer import IN_PLACE_SPEC, BufferSpec

PAGE = 4096
#: Element counts of doubles: empty, one, not a multiple of anything, several fragments.
COUNTS = [0, 1, 7, 511, 512, 513, 3 * 512 + 5, 20_000]


def spec(array: np.ndarray, datatype) -> BufferSpec:
    view = memoryview(array).cast("B")
    return BufferSpec(view, array.size, datatype, view)


def data(rank: int, count: int, dtype=np.float64) -> np.ndarray:
    rng = np.random.default_rng(1000 * rank + count)
    return rng.integers(-50, 50, count).astype(dtype)


# -- a non-commutative operation: composition of affine maps t -> a t + b (mod 2**16) --------

MASK = 0xFFFF


def compose(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """(outer o inner): apply ``inner`` first.  Packed as a << 32 | b in an int64."""
    a1, b1 = outer >> 32, outer & MASK
    a2, b2 = inner >> 32, inner & MASK
    return (((a1 * a2) & MASK) << 32) | ((a1 * b2 + b1) & MASK)


def _compose_op(inmem, inoutmem, _datatype) -> None:
    left = np.frombuffer(inmem, dtype=np.int64)
    right = np.frombuffer(inoutmem, dtype=np.int64)
    right[:] = compose(left, right)


COMPOSE = MPI.Op.Create(_compose_op, commute=False)


def affine(rank: int, count: int) -> np.ndarray:
    rng = np.random.default_rng(7 * rank + count)
    a = rng.integers(0, MASK + 1, count, dtype=np.int64)
    b = rng.integers(0, MASK + 1, count, dtype=np.int64)
    return (a << 32) | b


def test_the_affine_operation_is_associative_but_not_commutative():
    x, y, z = (affine(r, 64) for r in range(3))
    assert np.array_equal(compose(compose(x, y), z), compose(x, compose(y, z)))
    assert not np.array_equal(compose(x, y), compose(y, x))


# -- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [2, 3, 5])
def test_barrier_holds_every_rank_until_all_arrive(make_world, size):
    world = make_world(size, coll_sm_fragment_size=PAGE)
    world.enable()
    arrived: list[int] = []

    def body(rank):
        module, comm = world.modules[rank], world.comms[rank]
        for round_ in range(20):
            arrived.append(round_)
            module.barrier(comm)
            # nobody leaves barrier k before everyone entered it
            assert arrived.count(round_) == size
        return True

    assert world.run(body) == [True] * size


@pytest.mark.parametrize("size", [2, 3, 4])
def test_bcast_from_every_root_and_many_sizes(make_world, size):
    world = make_world(size, coll_sm_fragment_size=PAGE)
    world.enable()

    def body(rank):
        module, comm = world.modules[rank], world.comms[rank]
        for root in range(size):
            for nbytes in (0, 1, 8, PAGE - 1, PAGE, 5 * PAGE + 3, 100_000):
                want = np.arange(nbytes, dtype=np.uint8) ^ root
                buf = want.copy() if rank == root else np.zeros(nbytes, np.uint8)
                module.bcast(comm, spec(buf, MPI.BYTE), root)
                assert np.array_equal(buf, want), (root, nbytes)
        return True

    assert world.run(body) == [True] * size


@pytest.mark.parametrize("split_min", [0, 10**9], ids=["split", "whole"])
@pytest.mark.parametrize("size", [2, 3, 5])
def test_allreduce_sums_in_place_and_not(make_world, size, split_min):
    world = make_world(size, coll_sm_fragment_size=PAGE, coll_sm_split_min=split_min)
    world.enable()

    def body(rank):
        module, comm = world.modules[rank], world.comms[rank]
        for count in COUNTS:
            want = sum(data(r, count) for r in range(size)) if count else np.zeros(0)
            out = np.full(count, -1.0)
            module.allreduce(
                comm, spec(data(rank, count), MPI.DOUBLE), spec(out, MPI.DOUBLE), MPI.SUM
            )
            assert np.array_equal(out, want), count
            inout = data(rank, count)
            module.allreduce(comm, IN_PLACE_SPEC, spec(inout, MPI.DOUBLE), MPI.SUM)
            assert np.array_equal(inout, want), count
        return True

    assert world.run(body) == [True] * size


@pytest.mark.parametrize("split_min", [0, 10**9], ids=["split", "whole"])
@pytest.mark.parametrize("size", [2, 4])
def test_reduce_to_every_root_with_several_ops_and_types(make_world, size, split_min):
    world = make_world(size, coll_sm_fragment_size=PAGE, coll_sm_split_min=split_min)
    world.enable()
    cases = [
        (MPI.MAX, MPI.INT32_T, np.int32, np.maximum.reduce),
        (MPI.PROD, MPI.DOUBLE, np.float64, np.multiply.reduce),
        (MPI.BXOR, MPI.INT32_T, np.int32, np.bitwise_xor.reduce),
    ]

    def body(rank):
        module, comm = world.modules[rank], world.comms[rank]
        for root in range(size):
            for op, datatype, dtype, fold in cases:
                for count in (1, 1500, 3000):
                    inputs = [data(r, count, dtype) for r in range(size)]
                    out = np.zeros(count, dtype)
                    if rank == root and root % 2:
                        out[:] = inputs[rank]
                        module.reduce(comm, IN_PLACE_SPEC, spec(out, datatype), op, root)
                    else:
                        recv = spec(out, datatype) if rank == root else None
                        module.reduce(comm, spec(inputs[rank], datatype), recv, op, root)
                    if rank == root:
                        assert np.array_equal(out, fold(inputs)), (op, count)
                    else:
                        assert not out.any(), "a non-root's buffer was written"
        return True

    assert world.run(body) == [True] * size


@pytest.mark.parametrize("split_min", [0, 10**9], ids=["split", "whole"])
@pytest.mark.parametrize("size", [2, 3, 5])
def test_non_commutative_operations_combine_in_rank_order(make_world, size, split_min):
    world = make_world(size, coll_sm_fragment_size=PAGE, coll_sm_split_min=split_min)
    world.enable()

    def body(rank):
        module, comm = world.modules[rank], world.comms[rank]
        for count in (1, 100, 1200):
            want = affine(0, count)
            for r in range(1, size):
                want = compose(want, affine(r, count))
            out = np.zeros(count, np.int64)
            module.allreduce(
                comm, spec(affine(rank, count), MPI.INT64_T), spec(out, MPI.INT64_T), COMPOSE
            )
            assert np.array_equal(out, want), count
            root = count % size
            recv = spec(out, MPI.INT64_T) if rank == root else None
            out[:] = 0
            module.reduce(comm, spec(affine(rank, count), MPI.INT64_T), recv, COMPOSE, root)
            if rank == root:
                assert np.array_equal(out, want), count
        return True

    assert world.run(body) == [True] * size


def test_deep_pipelines_and_the_locked_protocol_give_the_same_results(make_world):
    world = make_world(
        3,
        coll_sm_fragment_size=PAGE,
        coll_sm_pipeline_depth=4,
        coll_sm_lockfree="no",
        coll_sm_split_min=PAGE,
    )
    world.enable()
    assert not any(module.lock_free for module in world.modules)

    def body(rank):
        module, comm = world.modules[rank], world.comms[rank]
        for count in (1, 600, 5000):
            out = np.zeros(count)
            module.allreduce(
                comm, spec(data(rank, count), MPI.DOUBLE), spec(out, MPI.DOUBLE), MPI.SUM
            )
            assert np.array_equal(out, sum(data(r, count) for r in range(3)))
            buf = data(1, count) if rank == 1 else np.zeros(count)
            module.bcast(comm, spec(buf, MPI.DOUBLE), 1)
            assert np.array_equal(buf, data(1, count))
            module.barrier(comm)
        return True

    assert world.run(body) == [True] * 3


def test_a_ring_that_comes_after_the_collective_is_drained_by_the_next_sleep(make_world):
    """A late ring must not leave the doorbell readable: every later sleep would return at once."""
    world = make_world(2, coll_sm_fragment_size=PAGE)
    world.enable()
    world.run(lambda rank: world.modules[rank].barrier(world.comms[rank]))
    flags = [module.flags for module in world.modules]
    flags[1].doorbell.ring(flags[0].doorbell.address)

    # rank 0 waits for something unrelated to the communicator, long enough to sleep
    assert world.comms[0].engine.wait_until(lambda: False, timeout=0.2) is False
    with pytest.raises(BlockingIOError):
        flags[0].doorbell.sock.recv(64)
