"""Method families made from one definition each keep every member's own face.

``Bsend``..``Rsend_init``, ``bsend``..``issend`` (``api.families.member``) and the buffer
collectives with their nonblocking forms (``api.families.staged_pair``) are generated, so
these tests pin what a user sees of them: mpi4py's signature and type hints, the docstring, the
method name in error messages, and what the call returns.  Getter properties
(``ompy.ompi.accessors``) are checked the same way.
"""

import inspect

import numpy as np
import pytest

from ompy.ompi import errors
from ompy.ompi.accessors import GetProperty, GetSetProperty
from ompy.ompi.api.comm import Intracomm
from ompy.ompi.api.request import Prequest, Request
from ompy.ompi.api.testing import default_instance, make_world, run_ranks
from ompy.ompi.op import SUM

SEND = "(self, buf: 'Any', dest: 'int', tag: 'int' = 0)"
OBJECT_SEND = "(self, obj: 'Any', dest: 'int', tag: 'int' = 0)"
ROOTED = "(self, sendbuf: 'Any', recvbuf: 'Any', root: 'int' = 0)"
EVERYONE = "(self, sendbuf: 'Any', recvbuf: 'Any')"
REDUCING = f"(self, sendbuf: 'Any', recvbuf: 'Any', op: 'Op' = {SUM})"

SIGNATURES = {
    "Bsend": SEND + " -> 'None'",
    "Ssend": SEND + " -> 'None'",
    "Rsend": SEND + " -> 'None'",
    "Ibsend": SEND + " -> 'Request'",
    "Issend": SEND + " -> 'Request'",
    "Irsend": SEND + " -> 'Request'",
    "Send_init": SEND + " -> 'Prequest'",
    "Bsend_init": SEND + " -> 'Prequest'",
    "Ssend_init": SEND + " -> 'Prequest'",
    "Rsend_init": SEND + " -> 'Prequest'",
    "bsend": OBJECT_SEND + " -> 'None'",
    "ssend": OBJECT_SEND + " -> 'None'",
    "isend": OBJECT_SEND + " -> 'Request'",
    "ibsend": OBJECT_SEND + " -> 'Request'",
    "issend": OBJECT_SEND + " -> 'Request'",
    "Barrier": "(self) -> 'None'",
    "Ibarrier": "(self) -> 'Request'",
    "Ibcast": "(self, buf: 'Any', root: 'int' = 0) -> 'Request'",
    "Gather": ROOTED + " -> 'None'",
    "Igatherv": ROOTED + " -> 'Request'",
    "Scatterv": ROOTED + " -> 'None'",
    "Iscatter": ROOTED + " -> 'Request'",
    "Allgatherv": EVERYONE + " -> 'None'",
    "Ialltoall": EVERYONE + " -> 'Request'",
    "Alltoallw": EVERYONE + " -> 'None'",
    "Reduce": REDUCING[:-1] + ", root: 'int' = 0) -> 'None'",
    "Iallreduce": REDUCING + " -> 'Request'",
    "Scan": REDUCING + " -> 'None'",
    "Iexscan": REDUCING + " -> 'Request'",
    "Reduce_scatter_block": REDUCING + " -> 'None'",
    "Ireduce_scatter": (
        "(self, sendbuf: 'Any', recvbuf: 'Any', recvcounts: 'Sequence[int] | None' = None, "
        f"op: 'Op' = {SUM}) -> 'Request'"
    ),
}

DOCS = {
    "Bsend": "Blocking send in buffered mode.",
    "Irsend": "Nonblocking send in ready mode.",
    "Ssend_init": "Create a persistent request for a synchronous send.",
    "issend": "Nonblocking send in synchronous mode.",
    "Gatherv": "Gather Vector: gather data to one process, with a count and displacement per rank.",
    "Igatherv": "Nonblocking gather vector.",
    "Iexscan": "Exclusive Scan (nonblocking).",
}


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_every_member_has_its_own_signature_and_name(name):
    method = getattr(Intracomm, name)
    assert str(inspect.signature(method)) == SIGNATURES[name]
    assert method.__name__ == name


@pytest.mark.parametrize("name", sorted(DOCS))
def test_every_member_has_its_own_docstring(name):
    assert getattr(Intracomm, name).__doc__ == DOCS[name]


def test_a_bound_member_shows_the_signature_without_self():
    (comm,) = make_world(1)
    signature = "(buf: 'Any', dest: 'int', tag: 'int' = 0) -> 'Request'"
    assert str(inspect.signature(comm.Issend)) == signature


def test_errors_name_the_member_that_was_called():
    comm = make_world(2)[0]
    for name in ("Bsend", "Issend", "Rsend_init", "ibsend"):
        with pytest.raises(errors.Exception) as info:
            getattr(comm, name)(np.zeros(1), 5)
        assert info.value.Get_error_class() == errors.ERR_RANK
        assert f"Comm.{name}: destination rank 5" in str(info.value)
    with pytest.raises(errors.Exception, match=r"Comm\.Igather: root 9"):
        comm.Igather(np.zeros(1), np.zeros(2), root=9)


def test_errors_of_members_go_through_the_communicators_error_handler():
    codes = []
    with default_instance():
        handler = Intracomm.Create_errhandler(lambda comm, code: codes.append(code))
    (world,) = make_world(1)
    dup = world.Dup()
    dup.Set_errhandler(handler)
    for call in (
        lambda: dup.Bsend(np.zeros(1), 7),
        lambda: dup.issend({"an": "object"}, 7),
        lambda: dup.Igather(np.zeros(1), np.zeros(1), root=3),
        lambda: dup.Reduce(np.zeros(1), np.zeros(1), root=3),
    ):
        with pytest.raises(errors.Exception):
            call()
    assert codes == [errors.ERR_RANK, errors.ERR_RANK, errors.ERR_ROOT, errors.ERR_ROOT]


def test_members_return_what_their_mode_makes():
    def rank(comm):
        peer = 1 - comm.rank
        out = np.full(2, float(comm.rank))
        got = np.zeros(2)
        persistent = comm.Ssend_init(out, peer, tag=3)
        assert type(persistent) is Prequest
        receive = comm.Irecv(got, peer, 3)
        persistent.Start()
        Request.Waitall([persistent, receive])
        assert got.tolist() == [peer, peer]
        total = np.zeros(2)
        request = comm.Iallreduce(out, total, op=SUM)
        assert type(request) is Request
        request.Wait()
        assert comm.Reduce_scatter_block(np.ones(2), np.zeros(1)) is None
        return total.tolist()

    assert run_ranks(make_world(2), rank) == [[1.0, 1.0], [1.0, 1.0]]


class _Holder:
    def __init__(self):
        self.names = []

    def Get_size(self) -> int:
        return 3

    def Get_name(self) -> str:
        return self.names[-1] if self.names else ""

    def Set_name(self, name: str) -> None:
        self.names.append(name)

    size = GetProperty(Get_size, "Number of processes.")
    name = GetSetProperty(Get_name, Set_name, "Print name.")


def test_a_get_property_reads_through_its_getter_and_refuses_assignment():
    holder = _Holder()
    assert holder.size == 3
    assert isinstance(_Holder.size, property)
    assert _Holder.size.__doc__ == "Number of processes."
    with pytest.raises(AttributeError):
        holder.size = 4


def test_a_get_set_property_assigns_through_its_setter():
    holder = _Holder()
    holder.name = "first"
    holder.name = "second"
    assert holder.names == ["first", "second"]
    assert holder.name == "second"
    assert _Holder.name.__doc__ == "Print name."


def test_a_property_calls_the_method_the_object_has_now():
    # A subclass's override, or the error-handler wrapper install_dispatch puts on the class.
    class Bigger(_Holder):
        def Get_size(self) -> int:
            return 7

    assert Bigger().size == 7
