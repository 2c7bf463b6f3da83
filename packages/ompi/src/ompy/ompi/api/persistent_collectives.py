"""Persistent collectives (MPI-4): ``Intracomm.Barrier_init`` .. ``Exscan_init`` and
``Topocomm.Neighbor_allgather_init`` .. ``Neighbor_alltoallw_init``.

Each ``X_init`` checks its arguments exactly as ``X`` does (the argument functions of
:class:`~.collective.Collectives`: same defaults, ``IN_PLACE`` and root rules, same errors),
plus ``info``, and hands the parsed buffers to the communicator's coll table's ``x_init``,
which sets the operation up once (algorithm, peers, tag, scratch space, reduction kernel: see
:mod:`ompy.ompi.mca.coll.base.persistent`).  The result is an inactive ``MPI.Prequest``:
``Start``/``Startall`` run the operation, ``Wait``/``Test`` complete it, and it may be started
again, as often as wanted, until ``Free``.

MPI's rules, as checked here:

- the init calls are collective (all members, same order); the starts need not be in the same
  order on every member (each request has its own tag, given at init);
- a request is started only when inactive (``Start`` of an active one raises ``ERR_REQUEST``);
- freeing an *active* persistent collective request is erroneous: ``Free`` raises
  ``ERR_REQUEST`` and the request stays usable; an inactive one is freed and its tag reused;
- starting a request whose communicator was freed raises ``ERR_COMM``.

Buffers of derived datatypes get stand-ins once, at init (:mod:`.staging`); each start refills
the input stand-ins from the program's buffers and each completion unpacks the results, before
the request reports completion.  In a heterogeneous job a reduction converts every member's
contribution (:mod:`.hetero_reductions`): its persistent form is a persistent allgather of the
contributions (its own tag, like any persistent collective), refilled at each start and
followed by the local conversion and reduction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..completion import CoreRequest, chain
from ..errors import ERR_COMM, ERR_OP, ERR_REQUEST
from ..errors import Exception as MPIException
from ..mca.coll.interface import PersistentCollective
from ..op import SUM, Op
from .collective import Collectives
from .communicator import Communicator
from .hetero_reductions import HeteroReductions
from .info import INFO_NULL, Info, info_items
from .neighbor import NeighborCollectives
from .request import Prequest
from .staging import Staging

#: What a collective's argument function returns: communicator, table arguments, staging.
Parsed = tuple[Communicator, tuple[Any, ...], Staging | None]


class PersistentCollectives:
    """The persistent half of :class:`~.comm.Intracomm` (with :class:`.Collectives`)."""

    __slots__ = ()

    def Barrier_init(self, info: Info = INFO_NULL) -> Prequest:
        """Persistent Barrier."""
        call = "Comm.Barrier_init"
        c = _begin(self, call, info)
        return _initialize(call, "barrier", (c, (), None))

    def Bcast_init(self, buf: Any, root: int = 0, info: Info = INFO_NULL) -> Prequest:
        """Persistent Broadcast."""
        call = "Comm.Bcast_init"
        _begin(self, call, info)
        return _initialize(call, "bcast", _collectives(self)._bcast_args(call, buf, root))

    def Gather_init(
        self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Gather."""
        call = "Comm.Gather_init"
        _begin(self, call, info)
        parsed = _collectives(self)._gather_args(call, sendbuf, recvbuf, root)
        return _initialize(call, "gather", parsed)

    def Gatherv_init(
        self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Gather Vector."""
        call = "Comm.Gatherv_init"
        _begin(self, call, info)
        parsed = _collectives(self)._gather_args(call, sendbuf, recvbuf, root)
        return _initialize(call, "gatherv", parsed)

    def Scatter_init(
        self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Scatter."""
        call = "Comm.Scatter_init"
        _begin(self, call, info)
        parsed = _collectives(self)._scatter_args(call, sendbuf, recvbuf, root)
        return _initialize(call, "scatter", parsed)

    def Scatterv_init(
        self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Scatter Vector."""
        call = "Comm.Scatterv_init"
        _begin(self, call, info)
        parsed = _collectives(self)._scatter_args(call, sendbuf, recvbuf, root)
        return _initialize(call, "scatterv", parsed)

    def Allgather_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent Gather to All."""
        call = "Comm.Allgather_init"
        _begin(self, call, info)
        parsed = _collectives(self)._allgather_args(call, sendbuf, recvbuf)
        return _initialize(call, "allgather", parsed)

    def Allgatherv_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent Gather to All Vector."""
        call = "Comm.Allgatherv_init"
        _begin(self, call, info)
        parsed = _collectives(self)._allgather_args(call, sendbuf, recvbuf)
        return _initialize(call, "allgatherv", parsed)

    def Alltoall_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent All to All Scatter/Gather."""
        call = "Comm.Alltoall_init"
        _begin(self, call, info)
        parsed = _collectives(self)._alltoall_args(call, sendbuf, recvbuf)
        return _initialize(call, "alltoall", parsed)

    def Alltoallv_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent All to All Scatter/Gather Vector."""
        call = "Comm.Alltoallv_init"
        _begin(self, call, info)
        parsed = _collectives(self)._alltoall_args(call, sendbuf, recvbuf)
        return _initialize(call, "alltoallv", parsed)

    def Alltoallw_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent All to All Scatter/Gather General."""
        call = "Comm.Alltoallw_init"
        _begin(self, call, info)
        parsed = _collectives(self)._alltoallw_args(call, sendbuf, recvbuf)
        return _initialize(call, "alltoallw", parsed)

    def Reduce_init(
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Reduce to Root."""
        call = "Comm.Reduce_init"
        _begin(self, call, info)
        parsed = _collectives(self)._reduce_args(call, sendbuf, recvbuf, op, root)
        return _initialize(call, "reduce", parsed)

    def Allreduce_init(
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Reduce to All."""
        call = "Comm.Allreduce_init"
        _begin(self, call, info)
        parsed = _collectives(self)._everyone_args(call, sendbuf, recvbuf, op)
        return _initialize(call, "allreduce", parsed)

    def Reduce_scatter_block_init(
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Reduce-Scatter Block (regular, non-vector version)."""
        call = "Comm.Reduce_scatter_block_init"
        _begin(self, call, info)
        parsed = _collectives(self)._reduce_scatter_block_args(call, sendbuf, recvbuf, op)
        return _initialize(call, "reduce_scatter_block", parsed)

    def Reduce_scatter_init(
        self,
        sendbuf: Any,
        recvbuf: Any,
        recvcounts: Sequence[int] | None = None,
        op: Op = SUM,
        info: Info = INFO_NULL,
    ) -> Prequest:
        """Persistent Reduce-Scatter (vector version)."""
        call = "Comm.Reduce_scatter_init"
        _begin(self, call, info)
        parsed = _collectives(self)._reduce_scatter_args(call, sendbuf, recvbuf, recvcounts, op)
        return _initialize(call, "reduce_scatter", parsed)

    def Scan_init(
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Inclusive Scan."""
        call = "Intracomm.Scan_init"
        _begin(self, call, info)
        parsed = _collectives(self)._everyone_args(call, sendbuf, recvbuf, op)
        return _initialize(call, "scan", parsed)

    def Exscan_init(
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Exclusive Scan."""
        call = "Intracomm.Exscan_init"
        _begin(self, call, info)
        parsed = _collectives(self)._everyone_args(call, sendbuf, recvbuf, op)
        return _initialize(call, "exscan", parsed)


class PersistentNeighborCollectives:
    """The persistent neighbor collectives of :class:`~.topocomm.Topocomm` (with
    :class:`~.neighbor.NeighborCollectives`, whose argument functions they share)."""

    __slots__ = ()

    def Neighbor_allgather_init(
        self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Neighbor Gather to All."""
        call = "Topocomm.Neighbor_allgather_init"
        _begin(self, call, info)
        parsed = _neighbors(self)._neighbor_allgather_args(call, sendbuf, recvbuf)
        return _initialize(call, "neighbor_allgather", parsed)

    def Neighbor_allgatherv_init(
        self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Neighbor Gather to All Vector."""
        call = "Topocomm.Neighbor_allgatherv_init"
        _begin(self, call, info)
        parsed = _neighbors(self)._neighbor_allgather_args(call, sendbuf, recvbuf)
        return _initialize(call, "neighbor_allgatherv", parsed)

    def Neighbor_alltoall_init(
        self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Neighbor All to All."""
        call = "Topocomm.Neighbor_alltoall_init"
        _begin(self, call, info)
        parsed = _neighbors(self)._neighbor_alltoall_args(call, sendbuf, recvbuf)
        return _initialize(call, "neighbor_alltoall", parsed)

    def Neighbor_alltoallv_init(
        self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Neighbor All to All Vector."""
        call = "Topocomm.Neighbor_alltoallv_init"
        _begin(self, call, info)
        parsed = _neighbors(self)._neighbor_alltoall_args(call, sendbuf, recvbuf)
        return _initialize(call, "neighbor_alltoallv", parsed)

    def Neighbor_alltoallw_init(
        self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Neighbor All to All General."""
        call = "Topocomm.Neighbor_alltoallw_init"
        _begin(self, call, info)
        parsed = _neighbors(self)._neighbor_alltoallw_args(call, sendbuf, recvbuf)
        return _initialize(call, "neighbor_alltoallw", parsed)


# -- the request --------------------------------------------------------------------------------


def _neighbors(handle: object) -> NeighborCollectives:
    """The handle as the neighbor collective mixin it is combined with."""
    assert isinstance(handle, NeighborCollectives)
    return handle


def _collectives(handle: object) -> Collectives:
    """The handle as the collective mixin it is combined with (its argument functions)."""
    assert isinstance(handle, Collectives)
    return handle


def _begin(handle: Any, call: str, info: Any) -> Communicator:
    """What every init does first: the live communicator, its tag drawn before anything can
    fail on this member only (:meth:`~ompy.ompi.mca.coll.base.persistent.PersistentTags.
    reserve`), and ``info`` checked (an ``Info``, ``INFO_NULL`` or None; no hint changes a plan
    yet)."""
    c: Communicator = handle._live(call)
    c.coll.persistent.reserve()
    info_items(info, call)
    return c


def _initialize(call: str, operation: str, parsed: Parsed) -> Prequest:
    """The inactive persistent request of ``operation`` on the parsed arguments."""
    c, args, staging = parsed
    finish: Callable[[], None] | None = None
    refill: Callable[[], None] | None = None
    if staging is not None and staging.hetero and staging.reduction:
        hetero = HeteroReductions(staging).persistent(c, operation, args)
        persistent: PersistentCollective = hetero.allgather
        refill, finish = hetero.refill, hetero.reduce
    else:
        persistent = getattr(c.coll, operation + "_init")(c, *args)
    if staging is not None and (staging.pending or staging._loads):
        finish = staging.unpack if finish is None else _both(finish, staging.unpack)
        refill = staging.reload if refill is None else _both(staging.reload, refill)

    def start() -> Any:
        if c.freed:
            raise MPIException(
                ERR_COMM, f"Prequest.Start: the communicator of this {call} request was freed"
            )
        if refill is not None:
            refill()
        if finish is None:
            return persistent.start()
        return _Finished(persistent.start(), finish)

    def on_free(active: Any) -> None:
        if active is not None:
            raise MPIException(
                ERR_REQUEST,
                f"Prequest.Free: this {call} request is active; complete it (Wait/Test) "
                "before freeing it (freeing an active persistent collective is erroneous)",
            )
        if not c.freed:
            persistent.free()

    return Prequest._persistent(start, c, on_free)


def _both(first: Callable[[], None], then: Callable[[], None]) -> Callable[[], None]:
    def both() -> None:
        first()
        then()

    return both


class _Finished(CoreRequest):
    """One start whose results need local work once the transfers completed (unpacking
    stand-ins, a heterogeneous reduction): complete only after it, so a program that sees the
    request complete sees its data in place."""

    __slots__ = ("finishing", "inner")

    def __init__(self, inner: Any, finishing: Callable[[], None]) -> None:
        super().__init__()
        self.inner = inner
        self.finishing = finishing
        if inner.complete:
            self._done(inner)
        else:
            chain(inner, self._done)

    def _done(self, inner: Any) -> None:
        if inner.exception is not None:
            self.fail(inner.error, inner.exception)
            return
        try:
            self.finishing()
        except Exception as error:
            self.fail(error.error_class if isinstance(error, MPIException) else ERR_OP, error)
            return
        self.finish()

    def cancel(self) -> None:
        """Collectives are not cancelled (MPI forbids it); nothing to do."""
