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

import inspect
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from ..errors import ERR_COMM, ERR_REQUEST
from ..errors import Exception as MPIException
from ..mca.coll.interface import PersistentCollective
from .collective import Collectives
from .communicator import Communicator
from .families import _present
from .hetero_reductions import HeteroReductions
from .info import INFO_NULL, info_items
from .neighbor import NeighborCollectives
from .request import Prequest
from .staging import StagedRequest, Staging

#: What a collective's argument function returns: communicator, table arguments, staging.
Parsed = tuple[Communicator, tuple[Any, ...], Staging | None]

_Self = TypeVar("_Self")
_Params = ParamSpec("_Params")


def persistent(
    arguments: Callable[Concatenate[_Self, str, _Params], Parsed], call: str, doc: str
) -> Callable[..., Prequest]:
    """The method ``call`` (``"Comm.Gather_init"``): the persistent form of the collective
    whose argument reader is ``arguments`` (the one its blocking and nonblocking forms use).

    Its signature is the reader's (without ``call``) followed by ``info=INFO_NULL``, as
    mpi4py's; calling it reserves the request's tag and checks ``info`` (:func:`_begin`),
    reads the arguments exactly as the collective does and sets the operation up once
    (:func:`_initialize`; the coll table's ``x_init``, ``x`` being the name in lower case
    without ``_init``).
    """
    operation = call.rpartition(".")[2].removesuffix("_init").lower()

    def method(self: _Self, /, *args: Any, **kwargs: Any) -> Prequest:
        bound = signature.bind(self, *args, **kwargs)  # the method's own (set below)
        info = bound.arguments.pop("info", INFO_NULL)
        _begin(self, call, info)
        return _initialize(call, operation, arguments(self, call, *bound.args[1:], **bound.kwargs))

    _present(method, call, doc, arguments, (list(inspect.signature(arguments).parameters)[1],))
    parameters = list(inspect.signature(method).parameters.values())
    info = inspect.Parameter(
        "info", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=INFO_NULL, annotation="Info"
    )
    signature = inspect.Signature([*parameters, info], return_annotation="Prequest")
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = {**method.__annotations__, "info": "Info", "return": "Prequest"}
    return method


def _no_arguments(self: Any, call: str) -> Parsed:
    """The argument reader of a barrier: no buffers, only the live communicator."""
    return self._live(call), (), None


class PersistentCollectives:
    """The persistent half of :class:`~.comm.Intracomm` (with :class:`.Collectives`): one row
    a method, its name and the argument reader of its collective."""

    __slots__ = ()

    Barrier_init = persistent(_no_arguments, "Comm.Barrier_init", "Persistent Barrier.")
    Bcast_init = persistent(Collectives._bcast_args, "Comm.Bcast_init", "Persistent Broadcast.")
    Gather_init = persistent(Collectives._gather_args, "Comm.Gather_init", "Persistent Gather.")
    Gatherv_init = persistent(
        Collectives._gather_args, "Comm.Gatherv_init", "Persistent Gather Vector."
    )
    Scatter_init = persistent(Collectives._scatter_args, "Comm.Scatter_init", "Persistent Scatter.")
    Scatterv_init = persistent(
        Collectives._scatter_args, "Comm.Scatterv_init", "Persistent Scatter Vector."
    )
    Allgather_init = persistent(
        Collectives._allgather_args, "Comm.Allgather_init", "Persistent Gather to All."
    )
    Allgatherv_init = persistent(
        Collectives._allgather_args, "Comm.Allgatherv_init", "Persistent Gather to All Vector."
    )
    Alltoall_init = persistent(
        Collectives._alltoall_args, "Comm.Alltoall_init", "Persistent All to All Scatter/Gather."
    )
    Alltoallv_init = persistent(
        Collectives._alltoall_args,
        "Comm.Alltoallv_init",
        "Persistent All to All Scatter/Gather Vector.",
    )
    Alltoallw_init = persistent(
        Collectives._alltoallw_args,
        "Comm.Alltoallw_init",
        "Persistent All to All Scatter/Gather General.",
    )
    Reduce_init = persistent(
        Collectives._reduce_args, "Comm.Reduce_init", "Persistent Reduce to Root."
    )
    Allreduce_init = persistent(
        Collectives._everyone_args, "Comm.Allreduce_init", "Persistent Reduce to All."
    )
    Reduce_scatter_block_init = persistent(
        Collectives._reduce_scatter_block_args,
        "Comm.Reduce_scatter_block_init",
        "Persistent Reduce-Scatter Block (regular, non-vector version).",
    )
    Reduce_scatter_init = persistent(
        Collectives._reduce_scatter_args,
        "Comm.Reduce_scatter_init",
        "Persistent Reduce-Scatter (vector version).",
    )
    Scan_init = persistent(
        Collectives._everyone_args, "Intracomm.Scan_init", "Persistent Inclusive Scan."
    )
    Exscan_init = persistent(
        Collectives._everyone_args, "Intracomm.Exscan_init", "Persistent Exclusive Scan."
    )


class PersistentNeighborCollectives:
    """The persistent neighbor collectives of :class:`~.topocomm.Topocomm` (with
    :class:`~.neighbor.NeighborCollectives`, whose argument readers they share)."""

    __slots__ = ()

    Neighbor_allgather_init = persistent(
        NeighborCollectives._neighbor_allgather_args,
        "Topocomm.Neighbor_allgather_init",
        "Persistent Neighbor Gather to All.",
    )
    Neighbor_allgatherv_init = persistent(
        NeighborCollectives._neighbor_allgather_args,
        "Topocomm.Neighbor_allgatherv_init",
        "Persistent Neighbor Gather to All Vector.",
    )
    Neighbor_alltoall_init = persistent(
        NeighborCollectives._neighbor_alltoall_args,
        "Topocomm.Neighbor_alltoall_init",
        "Persistent Neighbor All to All.",
    )
    Neighbor_alltoallv_init = persistent(
        NeighborCollectives._neighbor_alltoall_args,
        "Topocomm.Neighbor_alltoallv_init",
        "Persistent Neighbor All to All Vector.",
    )
    Neighbor_alltoallw_init = persistent(
        NeighborCollectives._neighbor_alltoallw_args,
        "Topocomm.Neighbor_alltoallw_init",
        "Persistent Neighbor All to All General.",
    )


# -- the request --------------------------------------------------------------------------------


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
        return StagedRequest(persistent.start(), finish)

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
