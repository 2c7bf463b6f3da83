"""Reductions in a heterogeneous job: allgather the contributions, convert, reduce locally.

The coll components reduce bytes as they arrive, in this process's representation; a member
that publishes another one cannot take part in that.  So a typed reduction in a heterogeneous
job (:class:`~.staging.Staging` decides) is an allgather of every member's contribution, each in
the representation its origin published, through the communicator's own coll table; when it
completes every member converts each contribution into its memory's representation and reduces
them in rank order (the lower ranks' values are the op's first operand, so non-commutative
ops give MPI's result), then keeps what its operation defines:

============================  =================================================================
reduce / allreduce            all contributions (reduce: the root keeps the result)
scan / exscan                 ranks ``0..r`` / ``0..r-1`` (exscan: rank 0's buffer is untouched)
reduce_scatter(_block)        all contributions, then this rank's block of the result
============================  =================================================================

The specs arrive restated by the staging: ``count`` elements of the predefined datatype the op
works on, over the program's own buffer (view or convertor).  Every member moves ``size`` times
its data: correctness whatever the algorithm, at a price only heterogeneous jobs pay.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ompy.opal.datatype.convert import packed_size
from ompy.opal.datatype.convertor import Convertor

from ..datatype.buffer import BufferSpec, VectorBufferSpec
from ..datatype.conversion import converted
from ..datatype.predefined import BYTE
from ..errors import ERR_CONVERSION
from ..errors import Exception as MPIException
from .staging import Staging


def _everyone(rank: int, size: int) -> range:
    return range(size)


def _inclusive(rank: int, size: int) -> range:
    return range(rank + 1)


def _exclusive(rank: int, size: int) -> range:
    return range(rank)


Keep = Callable[[int, int], range]
"""Which ranks' contributions member ``rank`` of ``size`` reduces: ``keep(rank, size)``."""


def _forms(keep: Keep) -> tuple[Callable[..., None], Callable[..., Any]]:
    """The blocking and the nonblocking method of a reduction whose every member gets the
    result of the contributions ``keep`` names (allreduce, scan, exscan)."""

    def blocking(
        self: HeteroReductions, comm: Any, send: BufferSpec, recv: BufferSpec, op: Any
    ) -> None:
        self._start(comm, send, recv, op, keep=keep)

    def nonblocking(
        self: HeteroReductions, comm: Any, send: BufferSpec, recv: BufferSpec, op: Any
    ) -> Any:
        return self._start(comm, send, recv, op, keep=keep, blocking=False)

    return blocking, nonblocking


class HeteroPersistent(NamedTuple):
    """A persistent reduction of a heterogeneous job: start ``refill()`` then ``allgather``;
    once it completed, ``reduce()`` (None: this member keeps no result)."""

    allgather: Any
    refill: Callable[[], None]
    reduce: Callable[[], None] | None


class HeteroReductions:
    """The reduction operations of a coll table, for one heterogeneous call (see module)."""

    __slots__ = ("staging",)

    def __init__(self, staging: Staging) -> None:
        self.staging = staging

    # -- the table's signatures -----------------------------------------------------------------

    def reduce(
        self, comm: Any, send: BufferSpec, recv: BufferSpec | None, op: Any, root: int
    ) -> None:
        self._start(comm, send, recv, op, keep=_everyone if comm.rank == root else None)

    def ireduce(
        self, comm: Any, send: BufferSpec, recv: BufferSpec | None, op: Any, root: int
    ) -> Any:
        keep = _everyone if comm.rank == root else None
        return self._start(comm, send, recv, op, keep=keep, blocking=False)

    # Every member keeps a result: the blocking and nonblocking forms differ only in which
    # contributions each rank keeps (_forms).
    allreduce, iallreduce = _forms(_everyone)
    scan, iscan = _forms(_inclusive)
    exscan, iexscan = _forms(_exclusive)

    def reduce_scatter_block(self, comm: Any, send: BufferSpec, recv: BufferSpec, op: Any) -> None:
        counts = (recv.count,) * comm.size
        self._start(comm, send, recv, op, keep=_everyone, counts=counts)

    def ireduce_scatter_block(self, comm: Any, send: BufferSpec, recv: BufferSpec, op: Any) -> Any:
        counts = (recv.count,) * comm.size
        return self._start(comm, send, recv, op, keep=_everyone, counts=counts, blocking=False)

    def reduce_scatter(
        self, comm: Any, send: BufferSpec, recv: BufferSpec, counts: Sequence[int], op: Any
    ) -> None:
        self._start(comm, send, recv, op, keep=_everyone, counts=tuple(counts))

    def ireduce_scatter(
        self, comm: Any, send: BufferSpec, recv: BufferSpec, counts: Sequence[int], op: Any
    ) -> Any:
        return self._start(
            comm, send, recv, op, keep=_everyone, counts=tuple(counts), blocking=False
        )

    # -- the one algorithm ----------------------------------------------------------------------

    def _start(  # noqa: PLR0917 (the table's arguments, plus what to keep)
        self,
        comm: Any,
        send: BufferSpec,
        recv: BufferSpec | None,
        op: Any,
        keep: Keep | None,
        counts: tuple[int, ...] | None = None,
        *,
        blocking: bool = True,
    ) -> Any:
        staging = self.staging
        source, signature = self.contribution(comm, send, recv)
        mine = staging._outgoing(source.packed(), signature)
        width = mine.nbytes
        gathered = memoryview(bytearray(width * comm.size))
        blocks = VectorBufferSpec(
            gathered,
            (width,) * comm.size,
            tuple(rank * width for rank in range(comm.size)),
            BYTE,
        )
        contribution = BufferSpec(mine, width, BYTE, mine)
        if keep is not None and recv is not None:
            ranks = keep(comm.rank, comm.size)
            staging._after.append(
                functools.partial(
                    self._reduce, comm, gathered, width, ranks, source, recv, op, counts
                )
            )
        if blocking:
            comm.coll.allgather(comm, contribution, blocks)
            return None
        return comm.coll.iallgather(comm, contribution, blocks)

    def contribution(
        self, comm: Any, send: BufferSpec, recv: BufferSpec | None
    ) -> tuple[BufferSpec, Any]:
        """What this member contributes (its spec) and its signature; ``ERR_CONVERSION`` when
        the members' architectures give it different sizes."""
        staging = self.staging
        # In place the input is in the receive buffer (a reduce-scatter's whole input: .input).
        source: BufferSpec | None = send
        if send.in_place:
            source = staging.input if staging.input is not None else recv
        assert source is not None
        datatype = source.datatype
        signature = datatype.layout.description.signature(source.count)
        sizes = {packed_size(signature, staging.arch(rank)) for rank in range(comm.size)}
        if len(sizes) > 1:
            raise MPIException(
                ERR_CONVERSION,
                f"{staging.call}: {source.count} x {datatype.Get_name()} has different sizes on "
                f"the members' architectures ({sorted(sizes)} bytes); ompy's reductions need "
                "the members to agree on element sizes",
            )
        return source, signature

    def persistent(self, comm: Any, operation: str, args: tuple[Any, ...]) -> HeteroPersistent:
        """The persistent form of reduction ``operation`` (``allreduce``, ...; ``args`` as the
        table takes them): a persistent allgather of the contributions, set up once, and the
        local conversion and reduction run after each start's allgather completed."""
        keep: Keep | None = _everyone
        counts: tuple[int, ...] | None = None
        if operation == "reduce":
            send, recv, op, root = args
            keep = _everyone if comm.rank == root else None
        elif operation == "reduce_scatter":
            send, recv, recvcounts, op = args
            counts = tuple(recvcounts)
        elif operation == "reduce_scatter_block":
            send, recv, op = args
            counts = (recv.count,) * comm.size
        else:
            send, recv, op = args
            keep = {"allreduce": _everyone, "scan": _inclusive, "exscan": _exclusive}[operation]
        staging = self.staging
        source, signature = self.contribution(comm, send, recv)
        width = packed_size(signature, staging.arch(comm.rank))
        mine = memoryview(bytearray(width))
        gathered = memoryview(bytearray(width * comm.size))
        blocks = VectorBufferSpec(
            gathered,
            (width,) * comm.size,
            tuple(rank * width for rank in range(comm.size)),
            BYTE,
        )
        allgather = comm.coll.allgather_init(comm, BufferSpec(mine, width, BYTE, mine), blocks)

        def refill() -> None:
            mine[:] = staging._outgoing(source.packed(), signature)

        reduce: Callable[[], None] | None = None
        if keep is not None and recv is not None:
            ranks = keep(comm.rank, comm.size)
            reduce = functools.partial(
                self._reduce, comm, gathered, width, ranks, source, recv, op, counts
            )
        return HeteroPersistent(allgather, refill, reduce)

    def _reduce(  # noqa: PLR0917 (bound once per call by _start)
        self,
        comm: Any,
        gathered: memoryview,
        width: int,
        ranks: range,
        source: BufferSpec,
        recv: BufferSpec,
        op: Any,
        counts: tuple[int, ...] | None,
    ) -> None:
        """Convert the contributions of ``ranks``, reduce them in order, deliver the result."""
        if not len(ranks):
            return  # exscan at rank 0: the buffer keeps what it held
        staging = self.staging
        datatype, count = source.datatype, source.count
        description = datatype.layout.description
        signature = description.signature(count)
        kernel = comm.instance.op.kernel(op, datatype)
        assert staging.archs is not None
        memory = staging.archs.memory
        result: memoryview | None = None
        for rank in ranks:
            block = gathered[rank * width : (rank + 1) * width]
            local = converted(block, signature, staging.arch(rank), memory, staging.call)
            image = memoryview(bytearray(max(count * datatype.extent, 0)))
            Convertor(description, image, 0, count).unpack(0, local)
            if result is not None:
                kernel(result, image, count)  # image = (lower ranks) op image
            result = image
        assert result is not None
        packed = Convertor(description, result, 0, count).pack_all()
        if counts is not None:  # this rank's block of the reduced vector
            start = sum(counts[: comm.rank]) * datatype.size
            packed = packed[start : start + counts[comm.rank] * datatype.size]
        if recv.convertor is not None:
            recv.convertor.unpack(0, packed)
        else:
            recv.view[: packed.nbytes] = packed
