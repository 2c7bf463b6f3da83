"""The lowercase collectives are the coll table's object operations, moved point to point.

They never use the table's buffer operations (each one is replaced here by one that fails),
reductions apply the operation at every step of a tree in rank order (checked
with associative, non-commutative operations), and every member gets its own copy.  In-process
loopback worlds of 1 to 9 ranks.
"""

from __future__ import annotations

import contextvars

import numpy as np
import pytest

from ompy import MPI
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.mca.coll import BLOCKING, NONBLOCKING
from ompy.opal.codec import STREAM_OOB_THRESHOLD


def no_byte_collectives(worlds):
    """Make every buffer operation of every rank's coll table fail if called."""
    for world in worlds:
        table = world._c.coll
        for operation in BLOCKING + NONBLOCKING:

            def refuse(*args, operation=operation):
                raise AssertionError(f"the object collective called the table's {operation}")

            setattr(table, operation, refuse)
    return worlds


def concat(x, y):
    """Associative, not commutative: the order of the ranks shows in the result."""
    return x + y


def everything(comm):
    rank, size = comm.Get_rank(), comm.Get_size()
    mine = (rank,)
    everyone = tuple(range(size))
    for root in range(size):
        payload = {"root": root, "array": np.arange(root + 2.0)}
        got = comm.bcast(payload if rank == root else None, root=root)
        assert got["root"] == root and np.array_equal(got["array"], np.arange(root + 2.0))
        assert got is not payload
        gathered = comm.gather([rank] * rank, root=root)
        assert gathered == ([[k] * k for k in range(size)] if rank == root else None)
        item = comm.scatter([f"item {k}" for k in range(size)] if rank == root else None, root)
        assert item == f"item {rank}"
        reduced = comm.reduce(mine, op=concat, root=root)
        assert reduced == (everyone if rank == root else None), (root, reduced)
        reduced = comm.reduce([rank], op=MPI.SUM, root=root)
        assert reduced == (list(everyone) if rank == root else None)
    assert comm.allreduce(mine, op=concat) == everyone
    assert comm.allreduce(rank + 1) == size * (size + 1) // 2
    assert comm.allreduce((rank % 3, rank), op=MPI.MAXLOC) == (min(2, size - 1), min(2, size - 1))
    assert comm.allreduce(rank == 1, op=MPI.LOR) is (size > 1)
    array = comm.allreduce(np.full(20_000, rank), op=MPI.SUM)  # out-of-band buffers
    assert np.array_equal(array, np.full(20_000, size * (size - 1) // 2))
    assert comm.scan(mine, op=concat) == everyone[: rank + 1]
    assert comm.exscan(mine, op=concat) == (None if rank == 0 else everyone[:rank])
    assert comm.allgather(f"r{rank}") == [f"r{k}" for k in range(size)]
    long = comm.allgather(list(range(rank, rank + 3000)))  # pickles beyond one eager message
    assert long == [list(range(k, k + 3000)) for k in range(size)]
    many = comm.bcast([np.full(2048, k) for k in range(1100)] if rank == 0 else None)
    assert len(many) == 1100 and all(int(a[0]) == k for k, a in enumerate(many))
    assert comm.alltoall([(rank, k) for k in range(size)]) == [(k, rank) for k in range(size)]
    return True


@pytest.mark.parametrize("size", range(1, 10))
def test_object_collectives_run_point_to_point_in_rank_order(size):
    assert all(run_ranks(no_byte_collectives(make_world(size)), everything, timeout=120))


def test_several_object_collectives_in_a_row_keep_their_messages_apart():
    def many(comm):
        rank = comm.Get_rank()
        results = [comm.allreduce((rank, step), op=concat) for step in range(150)]
        return all(
            r == tuple(x for k in range(3) for x in (k, step)) for step, r in enumerate(results)
        )

    assert all(run_ranks(no_byte_collectives(make_world(3)), many, timeout=60))


def test_a_bad_op_or_sequence_is_refused_before_anything_moves():
    def bad(comm):
        with pytest.raises(TypeError, match=r"op must be an MPI\.Op or a function"):
            comm.allreduce(1, op=3)
        with pytest.raises(ValueError, match="expecting 2 items"):
            comm.alltoall([1])
        return True

    assert all(run_ranks(make_world(2), bad, timeout=30))


def test_the_object_collectives_are_operations_of_the_coll_table():
    worlds = make_world(2)
    calls = []
    for world in worlds:
        table = world._c.coll
        assert table.provider("allreduce_object") == "basic"  # nobody else implements them
        original = table.allreduce_object

        def spy(comm, obj, op, original=original):
            calls.append(comm.rank)
            return original(comm, obj, op)

        table.allreduce_object = spy
    assert run_ranks(worlds, lambda comm: comm.allreduce(comm.Get_rank() + 1)) == [3, 3]
    assert sorted(calls) == [0, 1]  # the API called the table's operation on every rank


def test_a_long_pickle_stream_travels_as_a_buffer_of_its_own():
    """A stream past the codec's in-band limit (a long ``bytes``) is the first buffer."""

    def long_streams(comm):
        rank, size = comm.Get_rank(), comm.Get_size()
        block = bytes([rank]) * (STREAM_OOB_THRESHOLD + 1)
        joined = comm.allreduce(block, op=concat)
        assert joined == b"".join(bytes([k]) * len(block) for k in range(size))
        assert comm.bcast(block, root=size - 1) == bytes([size - 1]) * len(block)
        assert comm.reduce(block, op=concat, root=0) == (joined if rank == 0 else None)
        return True

    for size in (2, 3):
        assert all(run_ranks(no_byte_collectives(make_world(size)), long_streams, timeout=60))


class Unloadable:
    """Pickles, but refuses to be unpickled: the receiving side's decoding fails."""

    def __reduce__(self):
        return (_refuse, ())


def _refuse():
    raise RuntimeError("this object refuses to be unpickled")


def test_an_object_that_cannot_be_decoded_fails_the_call_and_leaves_the_communicator_usable():
    def bad_then_good(comm):
        rank, size = comm.Get_rank(), comm.Get_size()
        with pytest.raises(RuntimeError, match="refuses to be unpickled"):
            comm.allreduce(Unloadable(), op=lambda x, y: x)
        assert comm.allreduce(rank + 1) == size * (size + 1) // 2  # the same tags, next call
        mine = rank if rank == 0 else Unloadable()
        if rank == 0:  # the root decodes the others' objects
            with pytest.raises(RuntimeError, match="refuses to be unpickled"):
                comm.gather(mine)
        else:
            assert comm.gather(mine) is None
        assert comm.allgather(rank) == list(range(size))
        return True

    for size in (2, 4):
        assert all(run_ranks(make_world(size), bad_then_good, timeout=60))


def _raise_at(culprit):
    """A reduction function that fails on one rank only (the others' steps succeed)."""

    def op(x, y, culprit=culprit):
        if _RANK.get() == culprit:
            raise ArithmeticError(f"op refused on rank {culprit}")
        return x + y

    return op


#: The rank of the loopback member running in this thread.
_RANK: contextvars.ContextVar[int] = contextvars.ContextVar("rank")

#: Each object collective, called with this rank's object (``mine``) and a rank that matters.
OPERATIONS = {
    "bcast": lambda comm, mine, k: comm.bcast(mine, root=k),
    "gather": lambda comm, mine, k: comm.gather(mine, root=k),
    "scatter": lambda comm, mine, k: comm.scatter([mine] * comm.size, root=k),
    "allgather": lambda comm, mine, k: comm.allgather(mine),
    "alltoall": lambda comm, mine, k: comm.alltoall([mine] * comm.size),
    "reduce": lambda comm, mine, k: comm.reduce(mine, op=_raise_at(k), root=0),
    "allreduce": lambda comm, mine, k: comm.allreduce(mine, op=_raise_at(k)),
    "scan": lambda comm, mine, k: comm.scan(mine, op=_raise_at(k)),
    "exscan": lambda comm, mine, k: comm.exscan(mine, op=_raise_at(k)),
}


@pytest.mark.parametrize("size", [1, 2, 3, 5, 6])
def test_a_member_that_fails_still_plays_its_part_so_no_member_waits_forever(size):
    """Whatever fails on one member (its object does not pickle, a peer's does not unpickle,
    the reduction raises there), every member returns or raises: the failing ones their own
    exception, the others an MPI.Exception naming a failing rank, and the next collective on
    the same communicator works."""
    bad_objects = {
        "unpicklable": lambda: lambda: None,
        "unloadable": Unloadable,
        "raising op": lambda: 1,
    }

    def play(comm):
        rank = comm.Get_rank()
        _RANK.set(rank)
        outcomes = {}
        for name, call in OPERATIONS.items():
            for kind, make in bad_objects.items():
                for culprit in range(comm.size):
                    mine = make() if rank == culprit else 1
                    try:
                        call(comm, mine, culprit)
                        outcome = ("ok",)
                    except MPI.Exception as error:
                        outcome = ("peer", str(error))
                    except Exception as error:  # this member's own failure
                        outcome = ("own", type(error).__name__)
                    outcomes[name, kind, culprit] = outcome
                    assert comm.allreduce(1) == comm.size, (name, kind, culprit)
        return outcomes

    results = run_ranks(no_byte_collectives(make_world(size)), play, timeout=300)
    for key in results[0]:
        seen = {rank: outcomes[key] for rank, outcomes in enumerate(results)}
        own = {rank for rank, outcome in seen.items() if outcome[0] == "own"}
        for rank, outcome in seen.items():
            if outcome[0] == "peer":
                named = {r for r in own if f"rank {r} failed" in outcome[1]}
                assert named, (key, rank, outcome, own)
        name, kind, culprit = key
        if (
            kind == "unpicklable"
            and name not in {"gather", "bcast"}
            and (name, size)
            != (
                "exscan",
                1,
            )
        ):
            assert culprit in own, (key, seen)  # its object had to be encoded


def test_a_sequence_of_the_wrong_length_on_one_member_is_told_to_the_others():
    def wrong_on_one(comm):
        rank = comm.Get_rank()
        if rank == 0:
            with pytest.raises(ValueError, match="expecting 3 items"):
                comm.scatter([1, 2], root=0)
        else:
            with pytest.raises(MPI.Exception, match="rank 0 failed"):
                comm.scatter(None, root=0)
        if rank == 2:
            with pytest.raises(TypeError, match="expecting a sequence of 3 objects"):
                comm.alltoall(5)
        else:
            with pytest.raises(MPI.Exception, match="rank 2 failed"):
                comm.alltoall([rank] * 3)
        return comm.allreduce(1)

    assert run_ranks(make_world(3), wrong_on_one, timeout=60) == [3, 3, 3]


def test_a_wrong_neighbor_sequence_on_one_member_is_told_to_its_neighbours():
    def wrong_on_one(comm):
        ring = comm.Create_cart([comm.Get_size()], [True])
        rank = ring.Get_rank()
        try:
            if rank == 1:
                with pytest.raises(ValueError, match="expecting 2 items"):
                    ring.neighbor_alltoall([1, 2, 3])
            elif rank in (0, 2):  # the neighbours of rank 1 receive its failure
                with pytest.raises(MPI.Exception, match="rank 1 failed"):
                    ring.neighbor_alltoall([rank, rank])
            else:  # not a neighbour of rank 1: its exchange is whole
                assert ring.neighbor_alltoall([rank, rank]) == [(rank - 1) % 4, (rank + 1) % 4]
            return ring.allreduce(1)
        finally:
            ring.Free()

    assert run_ranks(make_world(4), wrong_on_one, timeout=60) == [4, 4, 4, 4]


def test_an_outcome_given_a_refused_sequence_sends_failures_and_raises_the_refusal():
    from ompy.ompi.mca.coll.base import Failure, Outcome

    def member(comm):
        run = Outcome(comm._c, "alltoall")
        refusal = ValueError("expecting 3 items, got 2")
        items = run.items(refusal, 3)
        assert [type(item) for item in items] == [Failure] * 3
        assert {item.rank for item in items} == {comm.Get_rank()}
        given = ["a", "b", "c"]
        assert run.items(given, 3) is given  # a sequence passes as it is
        with pytest.raises(ValueError, match="expecting 3 items") as raised:
            run.result(None)
        assert raised.value is refusal
        return True

    assert run_ranks(make_world(1), member, timeout=30) == [True]
