"""Collective methods of ``Intracomm``: buffer forms, nonblocking forms and pickled objects.

Each method checks its arguments the way mpi4py does (same signatures, defaults and
``MPI.IN_PLACE`` and root rules: a non-root's receive buffer of ``Gather``/``Reduce`` and send
buffer of ``Scatter`` are ignored), turns the buffers into specs and calls the communicator's
coll table (``comm.coll``, chosen per communicator by the coll framework), so the work is done
by whichever component serves that operation.  Nonblocking forms wrap the table's request in
an ``MPI.Request``.  Buffers of non-contiguous layouts reach the table as contiguous
stand-ins (:mod:`.staging`), unpacked when the operation completes.

The lowercase forms (:mod:`.common_collectives`, but for ``scan`` and ``exscan``) call the
table's object operations (``bcast_object``, ...), which the coll components provide like any
other (``basic`` moves the objects point to point, encoded by the
instance's codec, ``MPI.pickle``).  Every member receives its own copy, the root included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..constants import BOTTOM, IN_PLACE
from ..datatype import Datatype, from_code
from ..datatype.buffer import (
    IN_PLACE_SPEC,
    BufferSpec,
    VectorBufferSpec,
    export_buffer,
    parse_buffer,
    spec_of,
)
from ..errors import ERR_ROOT, ERR_TYPE, ERR_UNSUPPORTED_OPERATION
from ..errors import Exception as MPIException
from ..op import SUM, Op
from .checks import as_int
from .common_collectives import CommonCollectives, _object_op
from .communicator import Communicator
from .families import staged_pair
from .in_place import given, or_in_place
from .plain_buffers import plain_spec
from .staging import BlockwiseStaging, Staging, reduction_type
from .vector_messages import parse_vector_message


def _root(root: Any, c: Communicator, call: str) -> int:
    root = as_int(root, f"{call}: root")
    if 0 <= root < c.size:
        return root
    raise MPIException(
        ERR_ROOT,
        f"{call}: root {root} is not a rank of the communicator of size {c.size} "
        f"(valid: 0..{c.size - 1})",
    )


class Collectives(CommonCollectives):
    """The collective half of :class:`~.comm.Intracomm` (``_live`` gives the communicator;
    the barriers and most object collectives are :class:`.CommonCollectives`')."""

    __slots__ = ()

    _object_root = staticmethod(_root)

    @staticmethod
    def _gives_items(c: Communicator, root: int) -> bool:
        return c.rank == root

    # Each buffer collective and its nonblocking form are one family (.families): an argument
    # function checks the call's arguments the way mpi4py does and returns the communicator,
    # what its coll table operation takes and the call's staging (.staging); the pair of
    # methods is made from it.

    # -- broadcast -------------------------------------------------------------------------------

    def _bcast_args(
        self, call: str, buf: Any, root: int = 0
    ) -> tuple[Communicator, tuple[Any, ...], Staging | None]:
        c = self._live(call)
        root = _root(root, c, call)
        if buf is None:
            given(buf, call, "buf")  # raises: a buffer must be given
        spec = parse_buffer(buf, readonly=c.rank == root)
        if spec.convertor is None and c.pml.raw_views:  # contiguous, one architecture
            return c, (spec, root), None
        st = _staging(c, call, spec.datatype)
        staged = st.send(spec) if c.rank == root else st.receive(spec, origin=root)
        return c, (staged, root), st

    def Bcast(self, buf: Any, root: int = 0) -> None:
        """Broadcast data from one process to all other processes."""
        # Written out, as Allreduce is: a hot call, spared the family's argument packing; a
        # whole array to or from a valid root goes straight to the table (.plain_buffers).
        c = self._c
        if c is not None and not c.freed and type(root) is int and 0 <= root < c.size:
            spec = plain_spec(buf, writable=c.rank != root)
            if spec is not None and c.pml.raw_views:
                c.coll.bcast(c, spec, root)
                return
        c, (spec, root), st = self._bcast_args("Comm.Bcast", buf, root)
        c.coll.bcast(c, spec, root)
        if st is not None:
            st.finish()

    Ibcast = staged_pair(
        _bcast_args,
        "Comm.Bcast",
        "Broadcast data from one process to all other processes.",
        "Nonblocking broadcast.",
    )[1]

    # -- gather (the names ending in ``v`` are the vector forms) ---------------------------------

    def _gather_args(
        self, call: str, sendbuf: Any, recvbuf: Any, root: int = 0
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        root = _root(root, c, call)
        if c.rank != root:
            sendbuf = given(sendbuf, call, "sendbuf")
            sendspec = _send_spec(sendbuf, call, in_place=False)
            st = _staging(c, call, sendspec.datatype)
            return c, (st.send(sendspec), None, root), st
        sending, staged, st = _gathering(c, call, sendbuf, recvbuf, "the root's receive block")
        return c, (sending, staged, root), st

    Gather, Igather = staged_pair(
        _gather_args,
        "Comm.Gather",
        "Gather data to one process from all other processes.",
        "Nonblocking gather.",
    )
    Gatherv, Igatherv = staged_pair(
        _gather_args,
        "Comm.Gatherv",
        "Gather Vector: gather data to one process, with a count and displacement per rank.",
        "Nonblocking gather vector.",
    )

    # -- scatter ---------------------------------------------------------------------------------

    def _scatter_args(
        self, call: str, sendbuf: Any, recvbuf: Any, root: int = 0
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        root = _root(root, c, call)
        if c.rank != root:
            recvbuf = given(recvbuf, call, "recvbuf")
            if recvbuf is IN_PLACE:
                raise ValueError(f"{call}: MPI.IN_PLACE is valid only as the root's receive buffer")
            recvspec = parse_buffer(recvbuf, readonly=False)
            st = _staging(c, call, recvspec.datatype)
            return c, (None, st.receive(recvspec, origin=root), root), st
        sendbuf, recvbuf = given(sendbuf, call, "sendbuf"), or_in_place(recvbuf)
        sendspec = _per_rank(sendbuf, c.size, call, "sendbuf", readonly=True)
        recvspec = parse_buffer(recvbuf, readonly=False, in_place=True)
        if not recvspec.in_place:
            _same_size(
                _block_bytes(sendspec, c.rank), recvspec.nbytes, call, "the root's receive message"
            )
        st = _staging(c, call, sendspec.datatype)
        return c, (st.blocks(sendspec, output=False), st.receive(recvspec), root), st

    Scatter, Iscatter = staged_pair(
        _scatter_args,
        "Comm.Scatter",
        "Scatter data from one process to all other processes.",
        "Nonblocking scatter.",
    )
    Scatterv, Iscatterv = staged_pair(
        _scatter_args,
        "Comm.Scatterv",
        "Scatter Vector: scatter data from one process, with a count and displacement per rank.",
        "Nonblocking scatter vector.",
    )

    # -- allgather -------------------------------------------------------------------------------

    def _allgather_args(
        self, call: str, sendbuf: Any, recvbuf: Any
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        sending, staged, st = _gathering(c, call, sendbuf, recvbuf, "this rank's receive block")
        return c, (sending, staged), st

    Allgather, Iallgather = staged_pair(
        _allgather_args,
        "Comm.Allgather",
        "Gather to All: gather data from all processes and distribute it to all.",
        "Nonblocking gather to all.",
    )
    Allgatherv, Iallgatherv = staged_pair(
        _allgather_args,
        "Comm.Allgatherv",
        "Gather to All Vector.",
        "Nonblocking gather to all vector.",
    )

    # -- all to all ------------------------------------------------------------------------------

    def _alltoall_args(
        self, call: str, sendbuf: Any, recvbuf: Any
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        size = c.size
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        recvspec = _per_rank(recvbuf, size, call, "recvbuf", readonly=False)
        sendspec = _per_rank(sendbuf, size, call, "sendbuf", readonly=True, in_place=True)
        if not sendspec.in_place:
            _same_size(
                _block_bytes(sendspec, c.rank),
                _block_bytes(recvspec, c.rank),
                call,
                "the receive block",
            )
        st = _staging(c, call, recvspec.datatype)
        staged = st.blocks(recvspec, output=True, load=sendspec.in_place, origins=range(size))
        return c, (st.blocks(sendspec, output=False), staged), st

    Alltoall, Ialltoall = staged_pair(
        _alltoall_args,
        "Comm.Alltoall",
        "All to All Scatter/Gather: send data from all to all processes in a group.",
        "Nonblocking all to all.",
    )
    Alltoallv, Ialltoallv = staged_pair(
        _alltoall_args,
        "Comm.Alltoallv",
        "All to All Scatter/Gather Vector.",
        "Nonblocking all to all vector.",
    )

    def _alltoallw_args(
        self, call: str, sendbuf: Any, recvbuf: Any
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        recvspecs = _w_specs(recvbuf, c.size, readonly=False, call=call)
        st = BlockwiseStaging(call, c)  # each block has its own datatype
        if sendbuf is IN_PLACE:
            staged = tuple(
                st.receive(spec, load=True, origin=peer) for peer, spec in enumerate(recvspecs)
            )
            return c, (None, staged), st
        sendspecs = _w_specs(sendbuf, c.size, readonly=True, call=call)
        _same_size(sendspecs[c.rank].nbytes, recvspecs[c.rank].nbytes, call, "the receive block")
        sending = tuple(st.send(spec) for spec in sendspecs)
        staged = tuple(st.receive(spec, origin=peer) for peer, spec in enumerate(recvspecs))
        return c, (sending, staged), st

    Alltoallw, Ialltoallw = staged_pair(
        _alltoallw_args,
        "Comm.Alltoallw",
        "All to All Scatter/Gather General: a count, byte displacement and datatype per rank.",
        "Nonblocking all to all general.",
    )

    # -- reductions ------------------------------------------------------------------------------

    def _reduce_args(
        self, call: str, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        root = _root(root, c, call)
        if c.rank != root:
            sendspec = _send_spec(given(sendbuf, call, "sendbuf"), call, in_place=False)
            st = _staging(c, call, sendspec.datatype, reduce=True)
            sendspec = st.send(sendspec, reduce=True)
            _check_op(c, op, sendspec.datatype)
            return c, (sendspec, None, op, root), st
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        recvspec = parse_buffer(recvbuf, readonly=False)
        sendspec = _reduction_send(sendbuf, recvspec, call)
        st = _staging(c, call, recvspec.datatype, reduce=True)
        sendspec = st.send(sendspec, reduce=True)
        recvspec = st.receive(recvspec, reduce=True, load=sendspec.in_place)
        _check_op(c, op, recvspec.datatype)
        return c, (sendspec, recvspec, op, root), st

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:
        """Reduce to Root."""
        # Written out, as Allreduce is: whole arrays of a basic type to a valid root go
        # straight to the table (.plain_buffers); everything else takes the family's path.
        c = self._c
        if c is not None and not c.freed and type(root) is int and 0 <= root < c.size:
            if c.rank == root:
                recvspec = plain_spec(recvbuf, writable=True)
                sendspec = None if recvspec is None else _plain_send(sendbuf, recvspec)
            else:
                recvspec, sendspec = None, plain_spec(sendbuf, writable=False)
            if sendspec is not None and c.pml.raw_views:
                _check_op(c, op, sendspec.datatype if recvspec is None else recvspec.datatype)
                c.coll.reduce(c, sendspec, recvspec, op, root)
                return
        c, args, st = self._reduce_args("Comm.Reduce", sendbuf, recvbuf, op, root)
        st.table().reduce(c, *args)
        st.finish()

    Ireduce = staged_pair(
        _reduce_args, "Comm.Reduce", "Reduce to Root.", "Reduce to Root (nonblocking)."
    )[1]

    def _everyone_args(
        self, call: str, sendbuf: Any, recvbuf: Any, op: Op = SUM
    ) -> tuple[Communicator, tuple[Any, ...], Staging | None]:
        c = self._live(call)
        if recvbuf is None:
            given(recvbuf, call, "recvbuf")  # raises: a receive buffer must be given
        if sendbuf is None:
            sendbuf = IN_PLACE
        recvspec = parse_buffer(recvbuf, readonly=False)
        sendspec = _reduction_send(sendbuf, recvspec, call)
        if (  # the common case, kept short: contiguous predefined data (no pair), one architecture
            recvspec.convertor is None
            and sendspec.convertor is None
            and recvspec.datatype.layout.plain_named
            and c.pml.raw_views
        ):
            _check_op(c, op, recvspec.datatype)
            return c, (sendspec, recvspec, op), None
        st = _staging(c, call, recvspec.datatype, reduce=True)
        sendspec = st.send(sendspec, reduce=True)
        # Exscan leaves rank 0's buffer as it was: every stand-in starts with the buffer's data.
        recvspec = st.receive(recvspec, reduce=True, load=True)
        _check_op(c, op, recvspec.datatype)
        return c, (sendspec, recvspec, op), st

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """Reduce to All."""
        # Whole arrays of a basic type go straight to the table (.plain_buffers).
        c = self._c
        if c is not None and not c.freed:
            recvspec = plain_spec(recvbuf, writable=True)
            if recvspec is not None and c.pml.raw_views:
                sendspec = _plain_send(sendbuf, recvspec)
                if sendspec is not None:
                    _check_op(c, op, recvspec.datatype)  # ERR_OP before the peers wait
                    c.coll.allreduce(c, sendspec, recvspec, op)
                    return
        c, (sendspec, recvspec, op), st = self._everyone_args(
            "Comm.Allreduce", sendbuf, recvbuf, op
        )
        if st is None:
            c.coll.allreduce(c, sendspec, recvspec, op)
            return
        st.table().allreduce(c, sendspec, recvspec, op)
        st.finish()

    Iallreduce = staged_pair(
        _everyone_args, "Comm.Allreduce", "Reduce to All.", "Reduce to All (nonblocking)."
    )[1]

    Scan, Iscan = staged_pair(
        _everyone_args, "Intracomm.Scan", "Inclusive Scan.", "Inclusive Scan (nonblocking)."
    )
    Exscan, Iexscan = staged_pair(
        _everyone_args,
        "Intracomm.Exscan",
        "Exclusive Scan (rank 0's receive buffer is left as it was).",
        "Exclusive Scan (nonblocking).",
    )

    def _reduce_scatter_block_args(
        self, call: str, sendbuf: Any, recvbuf: Any, op: Op = SUM
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        size = c.size
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        if sendbuf is IN_PLACE:
            whole = _blocks(recvbuf, size, readonly=False, call=call)
            st = _staging(c, call, whole.datatype, reduce=True)
            count = whole.counts[0] if whole.counts else 0
            offset = (whole.displs[0] if whole.displs else 0) * whole.datatype.extent
            recvspec = st.whole(whole.buffer, offset, count * size, whole.datatype, count)
            _check_op(c, op, recvspec.datatype)
            return c, (parse_buffer(IN_PLACE, in_place=True), recvspec, op), st
        return _block_reduction(c, call, sendbuf, parse_buffer(recvbuf, readonly=False), op)

    Reduce_scatter_block, Ireduce_scatter_block = staged_pair(
        _reduce_scatter_block_args,
        "Comm.Reduce_scatter_block",
        "Reduce-Scatter Block (regular, non-vector version).",
        "Reduce-Scatter Block (nonblocking).",
    )

    def _reduce_scatter_args(
        self,
        call: str,
        sendbuf: Any,
        recvbuf: Any,
        recvcounts: Sequence[int] | None = None,
        op: Op = SUM,
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        size, rank = c.size, c.rank
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        parsed = parse_buffer(recvbuf, readonly=False)
        if sendbuf is IN_PLACE:
            if recvcounts is None:
                raise ValueError(
                    f"{call}: with MPI.IN_PLACE the receive counts must be given (recvcounts)"
                )
            counts = _counts(recvcounts, size, call)
            if parsed.count != sum(counts):
                raise ValueError(
                    f"{call}: mismatch in receive count {parsed.count} and sum(counts) "
                    f"{sum(counts)}"
                )
            st = _staging(c, call, parsed.datatype, reduce=True)
            recvspec = st.whole(
                parsed.buffer, parsed.offset, parsed.count, parsed.datatype, counts[rank]
            )
            _check_op(c, op, recvspec.datatype)
            per = _per(c, call, parsed)
            scaled = tuple(count * per for count in counts)
            return c, (parse_buffer(IN_PLACE, in_place=True), recvspec, scaled, op), st
        sendspec = _send_spec(sendbuf, call, in_place=False)
        if recvcounts is None:
            counts = tuple(int(n) for n in _allgather_counts(c, parsed.count))
        else:
            counts = _counts(recvcounts, size, call)
        return _counted_reduction(c, call, sendspec, parsed, counts, op)

    Reduce_scatter, Ireduce_scatter = staged_pair(
        _reduce_scatter_args,
        "Comm.Reduce_scatter",
        "Reduce-Scatter (vector version).",
        "Reduce-Scatter (nonblocking).",
    )

    # -- pickled objects (the others, shared with Intercomm, are in .common_collectives) --------

    def scan(self, sendobj: Any, op: Any = SUM) -> Any:
        """Inclusive scan of Python objects: rank ``r`` gets ``x0 op ... op xr``."""
        c = self._live("Intracomm.scan")
        return c.coll.scan_object(c, sendobj, _object_op(op, "Intracomm.scan"))

    def exscan(self, sendobj: Any, op: Any = SUM) -> Any:
        """Exclusive scan of Python objects: rank ``r`` gets ``x0 op ... op xr-1``, rank 0 None."""
        c = self._live("Intracomm.exscan")
        return c.coll.exscan_object(c, sendobj, _object_op(op, "Intracomm.exscan"))


# -- argument checks ------------------------------------------------------------------------------


def _send_spec(sendbuf: Any, call: str, *, in_place: bool) -> BufferSpec:
    if sendbuf is IN_PLACE and not in_place:
        raise ValueError(
            f"{call}: MPI.IN_PLACE is not valid here (only as the root's send buffer of a "
            "gather or reduction, or the send buffer of an all-to-all collective)"
        )
    return parse_buffer(sendbuf, in_place=in_place)


def _per_rank(
    msg: Any, size: int, call: str, what: str, *, readonly: bool, in_place: bool = False
) -> VectorBufferSpec:
    """A message of one block per rank: a vector message for the ``v`` forms (and
    ``MPI.IN_PLACE`` where ``in_place`` allows it; read as mpi4py reads it, see
    :mod:`.vector_messages`), else ``size`` equal blocks (a persistent form, ``Gatherv_init``, as
    its collective)."""
    if call.removesuffix("_init").endswith("v") or (in_place and msg is IN_PLACE):
        return parse_vector_message(
            msg, size, call=call, what=what, readonly=readonly, in_place=in_place
        )
    return _blocks(msg, size, readonly=readonly, call=call)


def _gathering(
    c: Communicator, call: str, sendbuf: Any, recvbuf: Any, where: str
) -> tuple[BufferSpec, VectorBufferSpec | None, Staging]:
    """The buffers of a member that receives every rank's block (a gather's root, every
    member of an allgather): its send stand-in, the stand-in of the receive blocks and the
    staging.  Its own block comes from the send buffer, or is already in place
    (``MPI.IN_PLACE``), so the stand-in of the receive blocks starts with their data then."""
    recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
    recvspec = _per_rank(recvbuf, c.size, call, "recvbuf", readonly=False)
    sendspec = _send_spec(sendbuf, call, in_place=True)
    if not sendspec.in_place:
        _same_size(sendspec.nbytes, _block_bytes(recvspec, c.rank), call, where)
    st = _staging(c, call, recvspec.datatype)
    staged = st.blocks(recvspec, output=True, load=sendspec.in_place, origins=range(c.size))
    return st.send(sendspec), staged, st


def _check_op(c: Communicator, op: Any, datatype: Datatype) -> None:
    """Fail now, on every member, if ``op`` cannot reduce ``datatype`` (not mid-collective)."""
    c.instance.op.kernel(op, datatype)


def _same_type(sent: Datatype, received: Datatype, call: str) -> None:
    if sent is not received and sent != received:  # two handles of one datatype are the same
        raise ValueError(
            f"{call}: mismatch in send and receive MPI datatypes ({sent.Get_name()} and "
            f"{received.Get_name()})"
        )


def _reduction_send(sendbuf: Any, recvspec: BufferSpec, call: str) -> BufferSpec:
    sendspec = parse_buffer(sendbuf, in_place=True)
    if sendspec.in_place:
        return sendspec
    _same_type(sendspec.datatype, recvspec.datatype, call)
    if sendspec.count != recvspec.count:
        raise ValueError(
            f"{call}: mismatch in send count {sendspec.count} and receive count {recvspec.count}"
        )
    return sendspec


def _plain_send(sendbuf: Any, recvspec: BufferSpec) -> BufferSpec | None:
    """A reduction's send buffer on the plain path: ``MPI.IN_PLACE`` (or None), or a whole
    array of the receive buffer's datatype and count; None sends the call to the general path
    (which reads every other form and raises the mismatch errors)."""
    if sendbuf is IN_PLACE or sendbuf is None:
        return IN_PLACE_SPEC
    sendspec = plain_spec(sendbuf, writable=False)
    if (
        sendspec is None
        or sendspec.datatype is not recvspec.datatype
        or sendspec.count != recvspec.count
    ):
        return None
    return sendspec


def _same_size(sent: int, received: int, call: str, where: str) -> None:
    """Both messages hold as many bytes of data (their packed sizes)."""
    if sent != received:
        raise ValueError(
            f"{call}: this rank's send message has {sent} bytes but {where} has "
            f"{received}; the counts and datatypes must describe the same amount of data"
        )


def _block_bytes(spec: VectorBufferSpec, index: int) -> int:
    """Bytes of data (packed) in block ``index`` of a vector message."""
    return spec.counts[index] * spec.datatype.size if spec.counts else 0


def _staging(
    c: Communicator, call: str, datatype: Datatype | None, *, reduce: bool = False
) -> Staging:
    """The stand-ins of one call (:mod:`.staging`); reductions on an intercommunicator are not
    served when its processes have different data representations."""
    st = Staging(call, c, datatype, reduction=reduce)
    if reduce and st.hetero and c.is_inter:
        raise MPIException(
            ERR_UNSUPPORTED_OPERATION,
            f"{call}: reductions on an intercommunicator are not supported when its processes "
            "have different data representations (a heterogeneous job)",
        )
    return st


def _block_reduction(
    c: Communicator, call: str, sendbuf: Any, recvspec: BufferSpec, op: Op
) -> tuple[Communicator, tuple[Any, ...], Staging]:
    """The arguments of ``Reduce_scatter_block`` with a send buffer (of either kind of
    communicator): one block per rank of this group, each the receive buffer's size."""
    blocks = _blocks(sendbuf, c.size, readonly=True, call=call)
    _same_type(blocks.datatype, recvspec.datatype, call)
    if blocks.counts and blocks.counts[0] != recvspec.count:
        raise ValueError(
            f"{call}: mismatch in send count {blocks.counts[0]} (per rank) and receive "
            f"count {recvspec.count}"
        )
    st = _staging(c, call, recvspec.datatype, reduce=True)
    sendspec = st.send(_whole(blocks), reduce=True)
    recvspec = st.receive(recvspec, reduce=True)
    _check_op(c, op, recvspec.datatype)
    return c, (sendspec, recvspec, op), st


def _counted_reduction(  # noqa: PLR0917 (the call's parsed arguments)
    c: Communicator,
    call: str,
    sendspec: BufferSpec,
    parsed: BufferSpec,
    counts: tuple[int, ...],
    op: Op,
) -> tuple[Communicator, tuple[Any, ...], Staging]:
    """The arguments of ``Reduce_scatter`` with a send buffer (of either kind of
    communicator): ``sum(counts)`` elements sent, ``counts[rank]`` received."""
    rank = c.rank
    _same_type(sendspec.datatype, parsed.datatype, call)
    if sendspec.count != sum(counts):
        raise ValueError(
            f"{call}: mismatch in send count {sendspec.count} and sum(counts) {sum(counts)}"
        )
    if parsed.count != counts[rank]:
        raise ValueError(
            f"{call}: mismatch in receive count {parsed.count} and counts[{rank}] {counts[rank]}"
        )
    st = _staging(c, call, parsed.datatype, reduce=True)
    per = _per(c, call, parsed)
    sendspec = st.send(sendspec, reduce=True)
    recvspec = st.receive(parsed, reduce=True)
    _check_op(c, op, recvspec.datatype)
    return c, (sendspec, recvspec, tuple(count * per for count in counts), op), st


def _per(c: Communicator, call: str, spec: BufferSpec) -> int:
    """Predefined elements per element of ``spec``'s datatype in a reduction."""
    return reduction_type(spec.datatype, call)[1]


def _counts(recvcounts: Any, size: int, call: str) -> tuple[int, ...]:
    try:
        counts = tuple(as_int(count, f"{call}: recvcounts item") for count in recvcounts)
    except TypeError:
        if isinstance(recvcounts, int | np.integer):
            raise TypeError(
                f"{call}: recvcounts must be a sequence of {size} counts, not a single int"
            ) from None
        raise
    if len(counts) != size:
        raise ValueError(
            f"{call}: expecting {size} receive counts (one per rank), got {len(counts)}"
        )
    if any(count < 0 for count in counts):
        raise ValueError(f"{call}: receive counts must not be negative, got {list(counts)}")
    return counts


# -- block messages ([buf, count, datatype] with one block per rank) ----------------------------


def _count_given(msg: Any) -> bool:
    """Whether a message names its count (then it is the count of each block)."""
    if type(msg) is not list and type(msg) is not tuple:
        return False
    if len(msg) == 2:
        if isinstance(msg[1], Datatype | str):
            return False
        spec = msg[1]
    elif len(msg) in (3, 4):
        spec = msg[1]
    else:
        return False
    if type(spec) in (list, tuple):
        spec = spec[0] if spec else None
    return spec is not None


def _blocks(msg: Any, size: int, *, readonly: bool, call: str) -> VectorBufferSpec:
    """A message of ``size`` equal blocks, as mpi4py reads it: an explicit count is per block."""
    spec = parse_buffer(msg, readonly=readonly)
    if (
        spec.convertor is not None
        and spec.convertor.description is not spec.datatype.layout.description
    ):
        raise ValueError(
            f"{call}: a non-contiguous array cannot be cut into one block per rank; pass a "
            "contiguous array (numpy.ascontiguousarray) or describe a block with a derived "
            "datatype"
        )
    extent = spec.datatype.extent
    if _count_given(msg):
        each = spec.count
        end = spec.offset + each * size * extent
        if end > spec.buffer.nbytes:
            raise ValueError(
                f"{call}: {size} blocks of {each} x {spec.datatype.Get_name()} do not fit in "
                f"the buffer of {spec.buffer.nbytes} bytes"
            )
    else:
        each, rest = divmod(spec.count, size) if size else (0, 0)
        if rest:
            raise ValueError(
                f"{call}: message: cannot infer count, number of entries {spec.count} is not "
                f"a multiple of required number of blocks {size}"
            )
    first = spec.offset // extent if extent else 0
    displs = tuple(first + index * each for index in range(size))
    return VectorBufferSpec(spec.buffer, (each,) * size, displs, spec.datatype)


def _whole(blocks: VectorBufferSpec) -> BufferSpec:
    """Every block of a regular message, as one BufferSpec."""
    total = sum(blocks.counts)
    offset = (blocks.displs[0] if blocks.displs else 0) * blocks.datatype.extent
    return spec_of(blocks.buffer, offset, total, blocks.datatype)


def _w_specs(msg: Any, size: int, *, readonly: bool, call: str) -> tuple[BufferSpec, ...]:
    """``[buf, (counts, displs), datatypes]``: displacements in bytes, one datatype per rank."""
    if type(msg) not in (list, tuple) or len(msg) not in (2, 3, 4):
        raise TypeError(
            f"{call}: expecting [buf, (counts, displs), datatypes] or [buf, counts, displs, "
            f"datatypes] (byte displacements, one datatype per rank), not {type(msg).__name__}"
        )
    if len(msg) == 2:
        obj, types = msg
        counts, displs = None, None
    elif len(msg) == 3:
        obj, pair, types = msg
        counts, displs = pair
    else:
        obj, counts, displs, types = msg
    counts = (1,) * size if counts is None else _counts(counts, size, call)
    displs = (0,) * size if displs is None else _counts(displs, size, call)
    datatypes = _datatypes(types, size, call)
    if obj is None or obj is BOTTOM:
        if any(counts):
            raise ValueError(
                f"{call}: MPI.BOTTOM (or None) as buffer with nonzero counts would address "
                "absolute memory, which ompy does not support; give a buffer object instead"
            )
        empty = memoryview(bytearray(0))
        return tuple(BufferSpec(empty, 0, datatype, empty) for datatype in datatypes)
    buffer, _ = export_buffer(obj, readonly=readonly, infer=False)
    specs = []
    for rank, (count, displ, datatype) in enumerate(zip(counts, displs, datatypes, strict=True)):
        try:
            specs.append(spec_of(buffer, displ, count, datatype, readonly=readonly))
        except ValueError as error:
            raise ValueError(
                f"{call}: block {rank} ({count} x {datatype.Get_name()} at byte {displ}) does "
                f"not fit in the buffer of {buffer.nbytes} bytes ({error})"
            ) from None
    return tuple(specs)


def _datatypes(types: Any, size: int, call: str) -> tuple[Datatype, ...]:
    if isinstance(types, Datatype | str):
        types = [types] * size
    found = []
    for item in types:
        datatype = from_code(item) if isinstance(item, str) else item
        if not isinstance(datatype, Datatype):
            raise TypeError(f"{call}: expecting Datatype items, not {type(item).__name__}")
        if not datatype:
            raise MPIException(ERR_TYPE, f"{call}: a datatype is DATATYPE_NULL")
        found.append(datatype)
    if len(found) != size:
        raise ValueError(f"{call}: expecting {size} datatypes (one per rank), got {len(found)}")
    return tuple(found)


# -- counts agreed among the members -------------------------------------------------------------


def _allgather_counts(c: Communicator, count: int) -> np.ndarray:
    """Every member's ``count`` (Reduce_scatter without recvcounts)."""
    sizes = np.zeros(c.size, dtype=np.int64)
    mine = parse_buffer(np.array([count], dtype=np.int64))
    spec = parse_buffer(sizes, readonly=False)
    blocks = VectorBufferSpec(spec.buffer, (1,) * c.size, tuple(range(c.size)), spec.datatype)
    st = _staging(c, "Comm.Reduce_scatter", spec.datatype)  # converted in a heterogeneous job
    staged = st.blocks(blocks, output=True, load=False, origins=range(c.size))
    assert staged is not None
    c.coll.allgather(c, st.send(mine), staged)
    st.finish()
    return sizes
