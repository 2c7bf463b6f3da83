"""The tuned module of one communicator: pick an algorithm per call, prepare its buffers, run it.

Each operation method reads the call's size facts (communicator size, message bytes, whether
the operation commutes), asks :func:`~.decision.decide` for an algorithm (the user's forced
one or the rule's), lays out the buffers the algorithm expects (the send buffer copied into
the receive buffer, ``IN_PLACE`` data snapshotted, block accessors), and runs it: blocking
calls in the caller with the module's reusable workspace, nonblocking calls on the progress
engine with a workspace of their own.

Every method also takes ``algorithm=`` (a name of :data:`~.decision.ALGORITHMS`), which
overrides the parameter for that call: the test programs use it to run every algorithm in one
job, since parameters cannot change once MPI is initialized.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import attrs

from ompy.ompi.mca.coll import CollModule
from ompy.ompi.mca.coll.base import copy, region, run_schedule, scratch, start_schedule
from ompy.opal import output

from .algorithms import (
    allgather,
    allreduce,
    alltoall,
    barrier,
    bcast,
    reduce,
    reduce_scatter,
    rooted,
    scan,
    vector,
)
from .decision import ALGORITHMS, decide
from .util import Reduction, Workspace

#: Operation -> algorithm name -> schedule ``function(comm, tag, workspace, *args)``.
SCHEDULES: dict[str, dict[str, Callable[..., Any]]] = {
    "barrier": {"recursive_doubling": barrier.recursive_doubling, "bruck": barrier.bruck},
    "bcast": {
        "binomial": bcast.binomial,
        "pipeline": bcast.pipeline,
        "binary": bcast.binary,
        "scatter_allgather": bcast.scatter_allgather,
    },
    "reduce": {"binomial": reduce.binomial, "pipeline": reduce.pipeline},
    "allreduce": {
        "recursive_doubling": allreduce.recursive_doubling,
        "ring": allreduce.ring,
        "rabenseifner": allreduce.rabenseifner,
        "reduce_bcast": allreduce.reduce_bcast,
    },
    "allgather": {
        "ring": allgather.ring,
        "recursive_doubling": allgather.recursive_doubling,
        "bruck": allgather.bruck,
        "neighbor_exchange": allgather.neighbor_exchange,
    },
    "allgatherv": {"ring": allgather.ring},
    "alltoall": {"pairwise": alltoall.pairwise, "linear": alltoall.linear, "bruck": alltoall.bruck},
    "alltoallv": {"pairwise": alltoall.pairwise, "linear": alltoall.linear},
    "gather": {"binomial": rooted.binomial_gather, "linear": rooted.linear_gather},
    "scatter": {"binomial": rooted.binomial_scatter, "linear": rooted.linear_scatter},
    "gatherv": {
        "linear": rooted.linear_gather,
        "linear_sync": vector.linear_sync_gatherv,
        "binomial": vector.binomial_gatherv,
    },
    "scatterv": {"linear": rooted.linear_scatter, "binomial": vector.binomial_scatterv},
    "alltoallw": {"pairwise": vector.pairwise_alltoallw, "linear": vector.linear_alltoallw},
    "reduce_scatter": {
        "recursive_halving": reduce_scatter.recursive_halving,
        "ring": reduce_scatter.ring,
        "nonoverlapping": reduce_scatter.nonoverlapping,
    },
    "scan": {
        "recursive_doubling": functools.partial(scan.recursive_doubling, exclusive=False),
        "linear": functools.partial(scan.linear, exclusive=False),
    },
    "exscan": {
        "recursive_doubling": functools.partial(scan.recursive_doubling, exclusive=True),
        "linear": functools.partial(scan.linear, exclusive=True),
    },
}
SCHEDULES["reduce_scatter_block"] = SCHEDULES["reduce_scatter"]

#: Default segment sizes of the operations that have segmented algorithms.  Long messages go
#: through the PML's rendezvous (a handshake each), so segments only pay where forwarding a
#: piece early lets other ranks start (bcast, reduce chains); the allreduce ring sends whole
#: blocks unless told otherwise.
SEGMENTS: dict[str, int] = {"bcast": 128 << 10, "reduce": 128 << 10, "allreduce": 0}


@attrs.frozen
class Settings:
    """The component's parameters as one module needs them."""

    #: Operation -> forced algorithm (``"auto"``: the decision rule).
    forced: dict[str, str] = attrs.field(factory=lambda: dict.fromkeys(ALGORITHMS, "auto"))
    #: Operation -> bytes per segment of its segmented algorithms (0: whole messages).
    segments: dict[str, int] = attrs.field(factory=lambda: dict(SEGMENTS))
    #: ``coll_tuned_verbose`` (0-100): from 1 a note for each forced algorithm set aside, from
    #: 20 the algorithm of every call (the logger's level says which; this is for reference).
    verbose: int = 0
    #: Where the notes go: the component's logger, ``ompy.coll.tuned``.
    log: logging.Logger = attrs.field(factory=lambda: output.get_logger("coll", "tuned"), eq=False)


class TunedCollModule(CollModule):
    """The operations coll/tuned implements on one communicator (the rest come from others)."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings()
        log = self.settings.log
        # Decided once: a quiet module never builds a note on the collective path.
        self._note = log.info if log.isEnabledFor(logging.INFO) else None
        self._each_call = log.isEnabledFor(logging.DEBUG)
        self.workspace = Workspace()

    def disable(self, comm: Any) -> None:
        """Drop the scratch buffers with the communicator."""
        self.workspace = Workspace()

    # -- dispatch -----------------------------------------------------------------------------

    def choose(
        self, operation: str, size: int, nbytes: int, commutative: bool, algorithm: str | None
    ) -> str:
        """The algorithm of one call (``algorithm`` overrides the forced parameter)."""
        forced = algorithm or self.settings.forced.get(operation, "auto")
        name = decide(operation, forced, size, nbytes, commutative, self._note)
        if self._each_call:
            self.settings.log.debug("%s of %d bytes on %d ranks: %s", operation, nbytes, size, name)
        return name

    def _go(
        self, comm: Any, blocking: bool, operation: str, function: Callable[..., Any], *args: Any
    ) -> Any:
        segment = self.settings.segments.get(operation, 0)
        if blocking:
            workspace = self.workspace
            workspace.segment = segment
            run_schedule(comm, function, workspace, *args)
            return None
        return start_schedule(comm, function, Workspace(segment), *args)

    # -- operations ---------------------------------------------------------------------------
    # Each operation with a nonblocking form is written once, taking ``blocking``: its ``i``
    # form is the same method with ``blocking=False`` (the schedule runs on the progress engine
    # with a workspace of its own, and the call returns its request).

    def barrier(self, comm: Any, algorithm: str | None = None, *, blocking: bool = True) -> Any:
        """Barrier: recursive doubling on ``2^k`` ranks, dissemination otherwise."""
        name = self.choose("barrier", comm.size, 0, True, algorithm)
        return self._go(comm, blocking, "barrier", SCHEDULES["barrier"][name])

    ibarrier = functools.partialmethod(barrier, blocking=False)

    def bcast(
        self,
        comm: Any,
        spec: Any,
        root: int,
        algorithm: str | None = None,
        *,
        blocking: bool = True,
    ) -> Any:
        """Broadcast: binomial for short messages, scatter + allgather or a pipeline for long."""
        name = self.choose("bcast", comm.size, spec.view.nbytes, True, algorithm)
        return self._go(comm, blocking, "bcast", SCHEDULES["bcast"][name], spec.view, root)

    ibcast = functools.partialmethod(bcast, blocking=False)

    def reduce(  # noqa: PLR0917 (the interface's arguments, then the override)
        self,
        comm: Any,
        sendspec: Any,
        recvspec: Any,
        op: Any,
        root: int,
        algorithm: str | None = None,
        *,
        blocking: bool = True,
    ) -> Any:
        """Reduce: binomial tree, or a segmented chain for long vectors."""
        mine = recvspec if sendspec.in_place else sendspec
        name = self.choose("reduce", comm.size, mine.view.nbytes, op.Is_commutative(), algorithm)
        target = recvspec.view if comm.rank == root else None
        red = Reduction(mine.view, target, mine.count, mine.datatype, op)
        return self._go(comm, blocking, "reduce", SCHEDULES["reduce"][name], red, root)

    ireduce = functools.partialmethod(reduce, blocking=False)

    def allreduce(
        self,
        comm: Any,
        sendspec: Any,
        recvspec: Any,
        op: Any,
        algorithm: str | None = None,
        *,
        blocking: bool = True,
    ) -> Any:
        """Allreduce: recursive doubling (short, or non-commutative); Rabenseifner or ring."""
        result = recvspec.view
        name = self.choose("allreduce", comm.size, result.nbytes, op.Is_commutative(), algorithm)
        if not sendspec.in_place:
            copy(result, sendspec.view)
        red = Reduction(result, result, recvspec.count, recvspec.datatype, op)
        return self._go(comm, blocking, "allreduce", SCHEDULES["allreduce"][name], red)

    iallreduce = functools.partialmethod(allreduce, blocking=False)

    def allgather(
        self,
        comm: Any,
        sendspec: Any,
        recvspec: Any,
        algorithm: str | None = None,
        *,
        blocking: bool = True,
    ) -> Any:
        """Allgather: recursive doubling or Bruck (short), neighbor exchange or ring (long)."""
        rank = comm.rank
        width = recvspec.counts[0] * recvspec.datatype.extent
        name = self.choose("allgather", comm.size, width, True, algorithm)
        if not sendspec.in_place:
            copy(recvspec.block(rank), sendspec.view)
        if name == "ring":
            return self._go(comm, blocking, "allgather", allgather.ring, recvspec.block)
        whole = recvspec.buffer

        def blocks(first: int, stop: int) -> memoryview:
            return whole[first * width : stop * width]

        return self._go(comm, blocking, "allgather", SCHEDULES["allgather"][name], blocks)

    iallgather = functools.partialmethod(allgather, blocking=False)

    def allgatherv(
        self, comm: Any, sendspec: Any, recvspec: Any, algorithm: str | None = None
    ) -> None:
        """Allgatherv: ring (any block layout)."""
        total = sum(recvspec.counts) * recvspec.datatype.extent
        name = self.choose("allgatherv", comm.size, total, True, algorithm)
        if not sendspec.in_place:
            copy(recvspec.block(comm.rank), sendspec.view)
        run_schedule(comm, SCHEDULES["allgatherv"][name], self.workspace, recvspec.block)

    def _alltoall(
        self,
        comm: Any,
        sendspec: Any,
        recvspec: Any,
        algorithm: str | None = None,
        *,
        operation: str,
        blocking: bool,
    ) -> Any:
        size = comm.size
        width = recvspec.counts[0] * recvspec.datatype.extent if operation == "alltoall" else 0
        name = self.choose(operation, size, width, True, algorithm)
        function = SCHEDULES[operation][name]
        if not sendspec.in_place:
            return self._go(comm, blocking, operation, function, sendspec.block, recvspec.block)
        # In place: send what the receive blocks hold before the schedule overwrites them.
        blocks = [recvspec.block(peer) for peer in range(size)]
        total = sum(block.nbytes for block in blocks)
        snapshot = self.workspace.get("snapshot", total) if blocking else scratch(total)
        starts = [0]
        for block in blocks:
            end = starts[-1] + block.nbytes
            copy(snapshot[starts[-1] : end], block)
            starts.append(end)

        def outgoing(peer: int) -> memoryview:
            return snapshot[starts[peer] : starts[peer + 1]]

        return self._go(comm, blocking, operation, function, outgoing, recvspec.block)

    #: Alltoall: Bruck (short blocks, many ranks), linear (medium), pairwise (long).
    alltoall = functools.partialmethod(_alltoall, operation="alltoall", blocking=True)
    ialltoall = functools.partialmethod(_alltoall, operation="alltoall", blocking=False)
    #: Alltoallv: linear up to 8 ranks, pairwise beyond.
    alltoallv = functools.partialmethod(_alltoall, operation="alltoallv", blocking=True)

    def gather(
        self, comm: Any, sendspec: Any, recvspec: Any, root: int, algorithm: str | None = None
    ) -> None:
        """Gather (regular blocks): binomial for short blocks, linear for long."""
        at_root = comm.rank == root
        if at_root:
            width = recvspec.counts[0] * recvspec.datatype.extent
            own = recvspec.block(root) if sendspec.in_place else sendspec.view
        else:
            width, own = sendspec.view.nbytes, sendspec.view
        name = self.choose("gather", comm.size, width, True, algorithm)
        if name == "binomial":
            whole = recvspec.buffer[: comm.size * width] if at_root else None
            args: tuple[Any, ...] = (own, whole, width, root)
        else:
            args = (own, recvspec.block if at_root else None, root)
        run_schedule(comm, SCHEDULES["gather"][name], self.workspace, *args)

    def scatter(
        self, comm: Any, sendspec: Any, recvspec: Any, root: int, algorithm: str | None = None
    ) -> None:
        """Scatter (regular blocks): binomial for short blocks, linear for long."""
        at_root = comm.rank == root
        if at_root:
            width = sendspec.counts[0] * sendspec.datatype.extent
            own = None if recvspec.in_place else recvspec.view
        else:
            width, own = recvspec.view.nbytes, recvspec.view
        name = self.choose("scatter", comm.size, width, True, algorithm)
        if name == "binomial":
            whole = sendspec.buffer[: comm.size * width] if at_root else None
            args: tuple[Any, ...] = (whole, own, width, root)
        else:
            args = (sendspec.block if at_root else None, own, root)
        run_schedule(comm, SCHEDULES["scatter"][name], self.workspace, *args)

    def gatherv(
        self, comm: Any, sendspec: Any, recvspec: Any, root: int, algorithm: str | None = None
    ) -> None:
        """Gatherv: linear, linear with an invitation per rank, or a binomial tree."""
        at_root = comm.rank == root
        own = recvspec.block(root) if at_root and sendspec.in_place else sendspec.view
        name = self.choose("gatherv", comm.size, 0, True, algorithm)
        block = recvspec.block if at_root else None
        run_schedule(comm, SCHEDULES["gatherv"][name], self.workspace, own, block, root)

    def scatterv(
        self, comm: Any, sendspec: Any, recvspec: Any, root: int, algorithm: str | None = None
    ) -> None:
        """Scatterv: linear, or a binomial tree carrying the blocks' sizes."""
        at_root = comm.rank == root
        own = None if at_root and recvspec.in_place else recvspec.view
        name = self.choose("scatterv", comm.size, 0, True, algorithm)
        block = sendspec.block if at_root else None
        run_schedule(comm, SCHEDULES["scatterv"][name], self.workspace, block, own, root)

    def alltoallw(
        self, comm: Any, sendspecs: Any, recvspecs: Any, algorithm: str | None = None
    ) -> None:
        """Alltoallw: everything at once (up to 8 ranks), pairwise exchange beyond."""
        name = self.choose("alltoallw", comm.size, 0, True, algorithm)
        incoming = [spec.view for spec in recvspecs]
        if sendspecs is None:  # IN_PLACE: send what the receive blocks hold now
            snapshot = self.workspace.get("snapshot", sum(view.nbytes for view in incoming))
            outgoing, start = [], 0
            for view in incoming:
                outgoing.append(snapshot[start : start + view.nbytes])
                copy(outgoing[-1], view)
                start += view.nbytes
        else:
            outgoing = [spec.view for spec in sendspecs]
        run_schedule(comm, SCHEDULES["alltoallw"][name], self.workspace, outgoing, incoming)

    def _reduce_scatter(  # noqa: PLR0917 (one body for both forms)
        self,
        comm: Any,
        operation: str,
        sendspec: Any,
        recvspec: Any,
        counts: tuple[int, ...],
        op: Any,
        algorithm: str | None,
    ) -> None:
        datatype = recvspec.datatype
        total = sum(counts)
        source = region(recvspec, total) if sendspec.in_place else sendspec.view
        name = self.choose(
            operation, comm.size, total * datatype.extent, op.Is_commutative(), algorithm
        )
        red = Reduction(source, recvspec.view, total, datatype, op)
        run_schedule(comm, SCHEDULES[operation][name], self.workspace, red, counts)

    def reduce_scatter_block(
        self, comm: Any, sendspec: Any, recvspec: Any, op: Any, algorithm: str | None = None
    ) -> None:
        """Reduce-scatter of equal blocks: recursive halving or ring (commutative), else reduce."""
        counts = (recvspec.count,) * comm.size
        self._reduce_scatter(
            comm, "reduce_scatter_block", sendspec, recvspec, counts, op, algorithm
        )

    def reduce_scatter(  # noqa: PLR0917 (the interface's arguments, then the override)
        self,
        comm: Any,
        sendspec: Any,
        recvspec: Any,
        recvcounts: tuple[int, ...],
        op: Any,
        algorithm: str | None = None,
    ) -> None:
        """Reduce-scatter: recursive halving or ring (commutative), else reduce then scatter."""
        self._reduce_scatter(
            comm, "reduce_scatter", sendspec, recvspec, tuple(recvcounts), op, algorithm
        )

    def _scan(  # noqa: PLR0917 (one body for both forms)
        self,
        comm: Any,
        operation: str,
        sendspec: Any,
        recvspec: Any,
        op: Any,
        algorithm: str | None,
    ) -> None:
        source = recvspec.view if sendspec.in_place else sendspec.view
        name = self.choose(operation, comm.size, source.nbytes, op.Is_commutative(), algorithm)
        red = Reduction(source, recvspec.view, recvspec.count, recvspec.datatype, op)
        run_schedule(comm, SCHEDULES[operation][name], self.workspace, red)

    def scan(
        self, comm: Any, sendspec: Any, recvspec: Any, op: Any, algorithm: str | None = None
    ) -> None:
        """Inclusive scan: a chain on up to 3 ranks, recursive doubling beyond."""
        self._scan(comm, "scan", sendspec, recvspec, op, algorithm)

    def exscan(
        self, comm: Any, sendspec: Any, recvspec: Any, op: Any, algorithm: str | None = None
    ) -> None:
        """Exclusive scan: a chain on up to 3 ranks, recursive doubling beyond."""
        self._scan(comm, "exscan", sendspec, recvspec, op, algorithm)
