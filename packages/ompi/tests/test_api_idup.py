"""``Comm.Idup``, ``Comm.Idup_with_info`` and ``Comm.Dup_with_info`` on loopback worlds."""

import numpy as np
import pytest

from ompy.ompi import errors
from ompy.ompi.api.comm import COMM_NULL
from ompy.ompi.api.errhandler import ERRORS_RETURN
from ompy.ompi.api.info import Info
from ompy.ompi.api.request import Request
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.constants import CONGRUENT, IDENT
from ompy.ompi.instance import adopted


def test_idup_returns_at_once_and_completes_once_every_member_has_called_it():
    def body(comm):
        rank = comm.Get_rank()
        if rank == 0:
            new, request = comm.Idup()
            assert isinstance(request, Request)
            assert not request.Test()  # rank 1 has not called Idup yet
            assert new == COMM_NULL  # usable once the request completes
            comm.Send(np.array([5], "i"), 1, 0)  # the caller goes on with other work
            request.Wait()
        else:
            got = np.zeros(1, "i")
            comm.Recv(got, 0, 0)  # rank 0's Idup is pending meanwhile
            assert got[0] == 5
            new, request = comm.Idup()
            request.Wait()
        assert new != COMM_NULL and not request
        assert new.Compare(comm) == CONGRUENT and new.Compare(new) == IDENT
        assert new.Get_rank() == rank and new.Get_size() == 2
        total = new.allreduce(rank + 1)
        new.Free()
        return total

    assert run_ranks(make_world(2), body) == [3, 3]


def test_several_idups_in_flight_with_blocking_dups_in_between_get_distinct_ids():
    def body(comm):
        first, r1 = comm.Idup()
        dup = comm.Dup()
        second, r2 = comm.Idup()
        split = comm.Split(comm.Get_rank() % 2)
        third, r3 = dup.Idup()
        Request.Waitall([r3, r2, r1])
        comms = [first, dup, second, split, third]
        ids = [c._c.context_id for c in comms]
        assert len(set(ids)) == len(ids) and comm._c.context_id not in ids
        # traffic on each stays on it
        for index, c in enumerate(comms):
            c.Barrier()
            assert c.bcast(index * 10 + c.Get_rank(), root=0) == index * 10
        for c in comms:
            c.Free()
        return ids

    ids = run_ranks(make_world(3), body)
    assert ids[0] == ids[1] == ids[2]  # the same id on every member


def test_idup_copies_attributes_through_their_copy_callbacks():
    (comm,) = make_world(1)
    with adopted(comm._c.instance):  # keyvals live on the process's instance
        keyval = comm.Create_keyval(copy_fn=lambda parent, key, value: value + 1)
        comm.Set_attr(keyval, 41)
        new, request = comm.Idup()
        request.Wait()
        assert new.Get_attr(keyval) == 42
        new.Free()
        comm.Delete_attr(keyval)
        comm.Free_keyval(keyval)


def test_idup_takes_the_hints_of_info_or_the_parents_and_its_error_handler():
    def body(comm):
        comm.Set_info(Info.Create({"parent_hint": "p"}))
        comm.Set_errhandler(ERRORS_RETURN)
        plain, r1 = comm.Idup()
        hinted, r2 = comm.Idup(Info.Create({"own": "x"}))
        with_info, r3 = comm.Idup_with_info(Info.Create({"with": "y"}))
        Request.Waitall([r1, r2, r3])
        result = (
            plain.Get_info().Get("parent_hint"),
            hinted.Get_info().Get("own"),
            hinted.Get_info().Get("parent_hint"),
            with_info.Get_info().Get("with"),
            plain.Get_errhandler() == ERRORS_RETURN,
        )
        for c in (plain, hinted, with_info):
            c.Free()
        return result

    assert run_ranks(make_world(2), body) == [("p", "x", None, "y", True)] * 2


def test_dup_with_info_takes_the_given_hints_and_the_attributes():
    def body(comm):
        comm.Set_info(Info.Create({"parent_hint": "p"}))
        dup = comm.Dup_with_info(Info.Create({"mine": "m"}))
        info = dup.Get_info()
        result = (info.Get("mine"), info.Get("parent_hint"), dup.Compare(comm))
        dup.Free()
        return result

    assert run_ranks(make_world(3), body) == [("m", None, CONGRUENT)] * 3


def test_idup_on_a_single_process_and_on_self():
    comm = make_world(1)[0]
    new, request = comm.Idup()
    request.Wait()
    assert new.Get_size() == 1 and new.allreduce(7) == 7
    new.Free()


def test_idup_arguments_are_checked_before_anything_starts():
    comm = make_world(1)[0]
    with pytest.raises(TypeError, match="info must be an Info"):
        comm.Idup({"a": "b"})
    with pytest.raises(TypeError, match="info must be an Info"):
        comm.Idup_with_info("x")
    with pytest.raises(errors.Exception) as info:
        COMM_NULL.Idup()
    assert info.value.Get_error_class() == errors.ERR_COMM


def test_idup_among_other_nonblocking_and_blocking_collectives_on_the_parent():
    def body(comm):
        rank = comm.Get_rank()
        barrier = comm.Ibarrier()
        new, request = comm.Idup()
        total = np.zeros(1)
        reduction = comm.Iallreduce(np.array([float(rank)]), total)
        blocking = comm.allreduce(rank)
        Request.Waitall([reduction, request, barrier])
        result = (total[0], blocking, new.allreduce(1))
        new.Free()
        return result

    assert run_ranks(make_world(4), body) == [(6.0, 6, 4)] * 4
