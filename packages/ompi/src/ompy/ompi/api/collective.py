"""Collective methods of ``Intracomm``: buffer forms, nonblocking forms and pickled objects.

Each method checks its arguments the way mpi4py does (same signatures, defaults and
``MPI.IN_PLACE`` and root rules: a non-root's receive buffer of ``Gather``/``Reduce`` and send
buffer of ``Scatter`` are ignored), turns the buffers into specs and calls the communicator's
coll table (``comm.coll``, chosen per communicator by the coll framework), so the work is done
by whichever component serves that operation.  Nonblocking forms wrap the table's request in
an ``MPI.Request``.

The lowercase forms call the table's object operations (``bcast_object``, ...), which the coll
components provide like any other (``basic`` moves the objects point to point, encoded by the
instance's codec, ``MPI.pickle``).  Every member receives its own copy, the root included.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..constants import BOTTOM, IN_PLACE
from ..datatype import Datatype, from_code
from ..datatype.buffer import (
    BufferSpec,
    VectorBufferSpec,
    export_buffer,
    parse_buffer,
    spec_of,
)
from ..errors import ERR_ROOT, ERR_TYPE
from ..errors import Exception as MPIException
from ..op import SUM, Op
from .checks import as_int
from .communicator import Communicator
from .in_place import given, or_in_place
from .request import Request
from .staging import Staging, reduction_type
from .vector_messages import parse_vector_message


class Collectives:
    """The collective half of :class:`~.comm.Intracomm` (``_live`` gives the communicator)."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    # -- barrier ---------------------------------------------------------------------------------

    def Barrier(self) -> None:
        """Barrier synchronization."""
        c = self._live("Comm.Barrier")
        c.coll.barrier(c)

    def Ibarrier(self) -> Request:
        """Nonblocking barrier synchronization."""
        c = self._live("Comm.Ibarrier")
        return Request._of(c.coll.ibarrier(c), c)

    def barrier(self) -> None:
        """Barrier synchronization."""
        self.Barrier()

    def ibarrier(self) -> Request:
        """Nonblocking barrier."""
        return self.Ibarrier()

    # -- broadcast -------------------------------------------------------------------------------

    def _bcast_args(
        self, call: str, buf: Any, root: Any
    ) -> tuple[Communicator, BufferSpec, int, Staging]:
        c = self._live(call)
        root = _root(root, c, call)
        buf = given(buf, call, "buf")
        spec = parse_buffer(buf, readonly=c.rank == root)
        st = _staging(c, call, spec.datatype)
        staged = st.send(spec) if c.rank == root else st.receive(spec, origin=root)
        return c, staged, root, st

    def Bcast(self, buf: Any, root: int = 0) -> None:
        """Broadcast data from one process to all other processes."""
        c, spec, root, st = self._bcast_args("Comm.Bcast", buf, root)
        c.coll.bcast(c, spec, root)
        st.finish()

    def Ibcast(self, buf: Any, root: int = 0) -> Request:
        """Nonblocking broadcast."""
        c, spec, root, st = self._bcast_args("Comm.Ibcast", buf, root)
        return Request._of(st.request(c.coll.ibcast(c, spec, root)), c)

    # -- gather ----------------------------------------------------------------------------------

    def _gather_args(
        self, call: str, sendbuf: Any, recvbuf: Any, root: Any, vector: bool
    ) -> tuple[Communicator, BufferSpec, VectorBufferSpec | None, int, Staging]:
        c = self._live(call)
        root = _root(root, c, call)
        if c.rank != root:
            sendbuf = given(sendbuf, call, "sendbuf")
            sendspec = _send_spec(sendbuf, call, in_place=False)
            st = _staging(c, call, sendspec.datatype)
            return c, st.send(sendspec), None, root, st
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        if vector:
            recvspec = _vector(recvbuf, c.size, call, "recvbuf", readonly=False)
        else:
            recvspec = _blocks(recvbuf, c.size, readonly=False, call=call)
        sendspec = _send_spec(sendbuf, call, in_place=True)
        if not sendspec.in_place:
            _same_size(
                sendspec.nbytes, _block_bytes(recvspec, c.rank), call, "the root's receive block"
            )
        st = _staging(c, call, recvspec.datatype)
        staged = st.blocks(recvspec, output=True, load=sendspec.in_place, origins=range(c.size))
        return c, st.send(sendspec), staged, root, st

    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Gather data to one process from all other processes."""
        c, s, r, root, st = self._gather_args("Comm.Gather", sendbuf, recvbuf, root, False)
        c.coll.gather(c, s, r, root)
        st.finish()

    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Gather Vector: gather data to one process, with a count and displacement per rank."""
        c, s, r, root, st = self._gather_args("Comm.Gatherv", sendbuf, recvbuf, root, True)
        c.coll.gatherv(c, s, r, root)
        st.finish()

    def Igather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        """Nonblocking gather."""
        c, s, r, root, st = self._gather_args("Comm.Igather", sendbuf, recvbuf, root, False)
        return Request._of(st.request(c.coll.igather(c, s, r, root)), c)

    def Igatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        """Nonblocking gather vector."""
        c, s, r, root, st = self._gather_args("Comm.Igatherv", sendbuf, recvbuf, root, True)
        return Request._of(st.request(c.coll.igatherv(c, s, r, root)), c)

    # -- scatter ---------------------------------------------------------------------------------

    def _scatter_args(
        self, call: str, sendbuf: Any, recvbuf: Any, root: Any, vector: bool
    ) -> tuple[Communicator, VectorBufferSpec | None, BufferSpec, int, Staging]:
        c = self._live(call)
        root = _root(root, c, call)
        if c.rank != root:
            recvbuf = given(recvbuf, call, "recvbuf")
            if recvbuf is IN_PLACE:
                raise ValueError(f"{call}: MPI.IN_PLACE is valid only as the root's receive buffer")
            recvspec = parse_buffer(recvbuf, readonly=False)
            st = _staging(c, call, recvspec.datatype)
            return c, None, st.receive(recvspec, origin=root), root, st
        sendbuf, recvbuf = given(sendbuf, call, "sendbuf"), or_in_place(recvbuf)
        if vector:
            sendspec = _vector(sendbuf, c.size, call, "sendbuf")
        else:
            sendspec = _blocks(sendbuf, c.size, readonly=True, call=call)
        recvspec = parse_buffer(recvbuf, readonly=False, in_place=True)
        if not recvspec.in_place:
            _same_size(
                _block_bytes(sendspec, c.rank), recvspec.nbytes, call, "the root's receive message"
            )
        st = _staging(c, call, sendspec.datatype)
        return c, st.blocks(sendspec, output=False), st.receive(recvspec), root, st

    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Scatter data from one process to all other processes."""
        c, s, r, root, st = self._scatter_args("Comm.Scatter", sendbuf, recvbuf, root, False)
        c.coll.scatter(c, s, r, root)
        st.finish()

    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        """Scatter Vector: scatter data from one process, with a count and displacement per rank."""
        c, s, r, root, st = self._scatter_args("Comm.Scatterv", sendbuf, recvbuf, root, True)
        c.coll.scatterv(c, s, r, root)
        st.finish()

    def Iscatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        """Nonblocking scatter."""
        c, s, r, root, st = self._scatter_args("Comm.Iscatter", sendbuf, recvbuf, root, False)
        return Request._of(st.request(c.coll.iscatter(c, s, r, root)), c)

    def Iscatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> Request:
        """Nonblocking scatter vector."""
        c, s, r, root, st = self._scatter_args("Comm.Iscatterv", sendbuf, recvbuf, root, True)
        return Request._of(st.request(c.coll.iscatterv(c, s, r, root)), c)

    # -- allgather -------------------------------------------------------------------------------

    def _allgather_args(
        self, call: str, sendbuf: Any, recvbuf: Any, vector: bool
    ) -> tuple[Communicator, BufferSpec, VectorBufferSpec, Staging]:
        c = self._live(call)
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        if vector:
            recvspec = _vector(recvbuf, c.size, call, "recvbuf", readonly=False)
        else:
            recvspec = _blocks(recvbuf, c.size, readonly=False, call=call)
        sendspec = _send_spec(sendbuf, call, in_place=True)
        if not sendspec.in_place:
            _same_size(
                sendspec.nbytes, _block_bytes(recvspec, c.rank), call, "this rank's receive block"
            )
        st = _staging(c, call, recvspec.datatype)
        staged = st.blocks(recvspec, output=True, load=sendspec.in_place, origins=range(c.size))
        assert staged is not None
        return c, st.send(sendspec), staged, st

    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        """Gather to All: gather data from all processes and distribute it to all."""
        c, s, r, st = self._allgather_args("Comm.Allgather", sendbuf, recvbuf, False)
        c.coll.allgather(c, s, r)
        st.finish()

    def Allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        """Gather to All Vector."""
        c, s, r, st = self._allgather_args("Comm.Allgatherv", sendbuf, recvbuf, True)
        c.coll.allgatherv(c, s, r)
        st.finish()

    def Iallgather(self, sendbuf: Any, recvbuf: Any) -> Request:
        """Nonblocking gather to all."""
        c, s, r, st = self._allgather_args("Comm.Iallgather", sendbuf, recvbuf, False)
        return Request._of(st.request(c.coll.iallgather(c, s, r)), c)

    def Iallgatherv(self, sendbuf: Any, recvbuf: Any) -> Request:
        """Nonblocking gather to all vector."""
        c, s, r, st = self._allgather_args("Comm.Iallgatherv", sendbuf, recvbuf, True)
        return Request._of(st.request(c.coll.iallgatherv(c, s, r)), c)

    # -- all to all ------------------------------------------------------------------------------

    def _alltoall_args(
        self, call: str, sendbuf: Any, recvbuf: Any, vector: bool
    ) -> tuple[Communicator, VectorBufferSpec, VectorBufferSpec, Staging]:
        c = self._live(call)
        size = c.size
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        if vector:
            recvspec = _vector(recvbuf, size, call, "recvbuf", readonly=False)
            sendspec = _vector(sendbuf, size, call, "sendbuf", in_place=True)
        else:
            recvspec = _blocks(recvbuf, size, readonly=False, call=call)
            if sendbuf is IN_PLACE:
                sendspec = _vector(IN_PLACE, size, call, "sendbuf", in_place=True)
            else:
                sendspec = _blocks(sendbuf, size, readonly=True, call=call)
        if not sendspec.in_place:
            _same_size(
                _block_bytes(sendspec, c.rank),
                _block_bytes(recvspec, c.rank),
                call,
                "the receive block",
            )
        st = _staging(c, call, recvspec.datatype)
        staged = st.blocks(recvspec, output=True, load=sendspec.in_place, origins=range(c.size))
        sending = st.blocks(sendspec, output=False)
        assert staged is not None and sending is not None
        return c, sending, staged, st

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        """All to All Scatter/Gather: send data from all to all processes in a group."""
        c, s, r, st = self._alltoall_args("Comm.Alltoall", sendbuf, recvbuf, False)
        c.coll.alltoall(c, s, r)
        st.finish()

    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        """All to All Scatter/Gather Vector."""
        c, s, r, st = self._alltoall_args("Comm.Alltoallv", sendbuf, recvbuf, True)
        c.coll.alltoallv(c, s, r)
        st.finish()

    def Ialltoall(self, sendbuf: Any, recvbuf: Any) -> Request:
        """Nonblocking all to all."""
        c, s, r, st = self._alltoall_args("Comm.Ialltoall", sendbuf, recvbuf, False)
        return Request._of(st.request(c.coll.ialltoall(c, s, r)), c)

    def Ialltoallv(self, sendbuf: Any, recvbuf: Any) -> Request:
        """Nonblocking all to all vector."""
        c, s, r, st = self._alltoall_args("Comm.Ialltoallv", sendbuf, recvbuf, True)
        return Request._of(st.request(c.coll.ialltoallv(c, s, r)), c)

    def _alltoallw_args(
        self, call: str, sendbuf: Any, recvbuf: Any
    ) -> tuple[Communicator, tuple[BufferSpec, ...] | None, tuple[BufferSpec, ...], _Stagings]:
        c = self._live(call)
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        recvspecs = _w_specs(recvbuf, c.size, readonly=False, call=call)
        if sendbuf is IN_PLACE:
            staged = tuple(
                _stage_w(c, call, spec, load=True, origin=peer)
                for peer, spec in enumerate(recvspecs)
            )
            return c, None, tuple(spec for spec, _ in staged), _Stagings([s for _, s in staged])
        sendspecs = _w_specs(sendbuf, c.size, readonly=True, call=call)
        _same_size(sendspecs[c.rank].nbytes, recvspecs[c.rank].nbytes, call, "the receive block")
        sending = tuple(_staging(c, call, spec.datatype).send(spec) for spec in sendspecs)
        staged = tuple(
            _stage_w(c, call, spec, load=False, origin=peer) for peer, spec in enumerate(recvspecs)
        )
        return c, sending, tuple(spec for spec, _ in staged), _Stagings([s for _, s in staged])

    def Alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:
        """All to All Scatter/Gather General: a count, byte displacement and datatype per rank."""
        c, s, r, st = self._alltoallw_args("Comm.Alltoallw", sendbuf, recvbuf)
        c.coll.alltoallw(c, s, r)
        st.finish()

    def Ialltoallw(self, sendbuf: Any, recvbuf: Any) -> Request:
        """Nonblocking all to all general."""
        c, s, r, st = self._alltoallw_args("Comm.Ialltoallw", sendbuf, recvbuf)
        return Request._of(st.request(c.coll.ialltoallw(c, s, r)), c)

    # -- reductions ------------------------------------------------------------------------------

    def _reduce_args(
        self, call: str, sendbuf: Any, recvbuf: Any, op: Any, root: Any
    ) -> tuple[Communicator, BufferSpec, BufferSpec | None, int, Staging]:
        c = self._live(call)
        root = _root(root, c, call)
        if c.rank != root:
            sendspec = _send_spec(given(sendbuf, call, "sendbuf"), call, in_place=False)
            st = _staging(c, call, sendspec.datatype, reduce=True)
            sendspec = st.send(sendspec, reduce=True)
            _check_op(c, op, sendspec.datatype)
            return c, sendspec, None, root, st
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        recvspec = parse_buffer(recvbuf, readonly=False)
        sendspec = _reduction_send(sendbuf, recvspec, call)
        st = _staging(c, call, recvspec.datatype, reduce=True)
        sendspec = st.send(sendspec, reduce=True)
        recvspec = st.receive(recvspec, reduce=True, load=sendspec.in_place)
        _check_op(c, op, recvspec.datatype)
        return c, sendspec, recvspec, root, st

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:
        """Reduce to Root."""
        c, s, r, root, st = self._reduce_args("Comm.Reduce", sendbuf, recvbuf, op, root)
        st.table().reduce(c, s, r, op, root)
        st.finish()

    def Ireduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> Request:
        """Reduce to Root (nonblocking)."""
        c, s, r, root, st = self._reduce_args("Comm.Ireduce", sendbuf, recvbuf, op, root)
        return Request._of(st.request(st.table().ireduce(c, s, r, op, root)), c)

    def _everyone_args(
        self, call: str, sendbuf: Any, recvbuf: Any, op: Any
    ) -> tuple[Communicator, BufferSpec, BufferSpec, Staging]:
        c = self._live(call)
        recvbuf, sendbuf = given(recvbuf, call, "recvbuf"), or_in_place(sendbuf)
        recvspec = parse_buffer(recvbuf, readonly=False)
        sendspec = _reduction_send(sendbuf, recvspec, call)
        st = _staging(c, call, recvspec.datatype, reduce=True)
        sendspec = st.send(sendspec, reduce=True)
        # Exscan leaves rank 0's buffer as it was: every stand-in starts with the buffer's data.
        recvspec = st.receive(recvspec, reduce=True, load=True)
        _check_op(c, op, recvspec.datatype)
        return c, sendspec, recvspec, st

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """Reduce to All."""
        c, s, r, st = self._everyone_args("Comm.Allreduce", sendbuf, recvbuf, op)
        st.table().allreduce(c, s, r, op)
        st.finish()

    def Iallreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        """Reduce to All (nonblocking)."""
        c, s, r, st = self._everyone_args("Comm.Iallreduce", sendbuf, recvbuf, op)
        return Request._of(st.request(st.table().iallreduce(c, s, r, op)), c)

    def Scan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """Inclusive Scan."""
        c, s, r, st = self._everyone_args("Intracomm.Scan", sendbuf, recvbuf, op)
        st.table().scan(c, s, r, op)
        st.finish()

    def Iscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        """Inclusive Scan (nonblocking)."""
        c, s, r, st = self._everyone_args("Intracomm.Iscan", sendbuf, recvbuf, op)
        return Request._of(st.request(st.table().iscan(c, s, r, op)), c)

    def Exscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """Exclusive Scan (rank 0's receive buffer is left as it was)."""
        c, s, r, st = self._everyone_args("Intracomm.Exscan", sendbuf, recvbuf, op)
        st.table().exscan(c, s, r, op)
        st.finish()

    def Iexscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        """Exclusive Scan (nonblocking)."""
        c, s, r, st = self._everyone_args("Intracomm.Iexscan", sendbuf, recvbuf, op)
        return Request._of(st.request(st.table().iexscan(c, s, r, op)), c)

    def _reduce_scatter_block_args(
        self, call: str, sendbuf: Any, recvbuf: Any, op: Any
    ) -> tuple[Communicator, BufferSpec, BufferSpec, Staging]:
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
            return c, parse_buffer(IN_PLACE, in_place=True), recvspec, st
        recvspec = parse_buffer(recvbuf, readonly=False)
        blocks = _blocks(sendbuf, size, readonly=True, call=call)
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
        return c, sendspec, recvspec, st

    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """Reduce-Scatter Block (regular, non-vector version)."""
        c, s, r, st = self._reduce_scatter_block_args(
            "Comm.Reduce_scatter_block", sendbuf, recvbuf, op
        )
        st.table().reduce_scatter_block(c, s, r, op)
        st.finish()

    def Ireduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> Request:
        """Reduce-Scatter Block (nonblocking)."""
        c, s, r, st = self._reduce_scatter_block_args(
            "Comm.Ireduce_scatter_block", sendbuf, recvbuf, op
        )
        return Request._of(st.request(st.table().ireduce_scatter_block(c, s, r, op)), c)

    def _reduce_scatter_args(
        self, call: str, sendbuf: Any, recvbuf: Any, recvcounts: Any, op: Any
    ) -> tuple[Communicator, BufferSpec, BufferSpec, tuple[int, ...], Staging]:
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
            per = recvspec.count // counts[rank] if counts[rank] else _per(c, call, parsed)
            scaled = tuple(count * per for count in counts)
            return c, parse_buffer(IN_PLACE, in_place=True), recvspec, scaled, st
        sendspec = _send_spec(sendbuf, call, in_place=False)
        if recvcounts is None:
            counts = tuple(int(n) for n in _allgather_counts(c, parsed.count))
        else:
            counts = _counts(recvcounts, size, call)
        _same_type(sendspec.datatype, parsed.datatype, call)
        if sendspec.count != sum(counts):
            raise ValueError(
                f"{call}: mismatch in send count {sendspec.count} and sum(counts) {sum(counts)}"
            )
        if parsed.count != counts[rank]:
            raise ValueError(
                f"{call}: mismatch in receive count {parsed.count} and counts[{rank}] "
                f"{counts[rank]}"
            )
        st = _staging(c, call, parsed.datatype, reduce=True)
        per = _per(c, call, parsed)
        sendspec = st.send(sendspec, reduce=True)
        recvspec = st.receive(parsed, reduce=True)
        _check_op(c, op, recvspec.datatype)
        return c, sendspec, recvspec, tuple(count * per for count in counts), st

    def Reduce_scatter(
        self, sendbuf: Any, recvbuf: Any, recvcounts: Sequence[int] | None = None, op: Op = SUM
    ) -> None:
        """Reduce-Scatter (vector version)."""
        c, s, r, counts, st = self._reduce_scatter_args(
            "Comm.Reduce_scatter", sendbuf, recvbuf, recvcounts, op
        )
        st.table().reduce_scatter(c, s, r, counts, op)
        st.finish()

    def Ireduce_scatter(
        self, sendbuf: Any, recvbuf: Any, recvcounts: Sequence[int] | None = None, op: Op = SUM
    ) -> Request:
        """Reduce-Scatter (nonblocking)."""
        c, s, r, counts, st = self._reduce_scatter_args(
            "Comm.Ireduce_scatter", sendbuf, recvbuf, recvcounts, op
        )
        return Request._of(st.request(st.table().ireduce_scatter(c, s, r, counts, op)), c)

    # -- pickled objects -------------------------------------------------------------------------

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """Broadcast a Python object from one process to all other processes."""
        c = self._live("Comm.bcast")
        return c.coll.bcast_object(c, obj, _root(root, c, "Comm.bcast"))

    def gather(self, sendobj: Any, root: int = 0) -> list[Any] | None:
        """Gather Python objects to one process (``None`` on the others)."""
        c = self._live("Comm.gather")
        return c.coll.gather_object(c, sendobj, _root(root, c, "Comm.gather"))

    def scatter(self, sendobj: Sequence[Any] | None = None, root: int = 0) -> Any:
        """Scatter Python objects: item ``i`` of the root's sequence goes to rank ``i``."""
        c = self._live("Comm.scatter")
        root = _root(root, c, "Comm.scatter")
        items = _items(sendobj, c.size, "Comm.scatter") if c.rank == root else None
        return c.coll.scatter_object(c, items, root)

    def allgather(self, sendobj: Any) -> list[Any]:
        """Gather Python objects to every process."""
        c = self._live("Comm.allgather")
        return c.coll.allgather_object(c, sendobj)

    def alltoall(self, sendobj: Sequence[Any]) -> list[Any]:
        """Item ``i`` of every process's sequence goes to rank ``i``; the items received."""
        c = self._live("Comm.alltoall")
        return c.coll.alltoall_object(c, _items(sendobj, c.size, "Comm.alltoall"))

    def reduce(self, sendobj: Any, op: Any = SUM, root: int = 0) -> Any | None:
        """Reduce Python objects to the root (``None`` on the others)."""
        c = self._live("Comm.reduce")
        root = _root(root, c, "Comm.reduce")
        return c.coll.reduce_object(c, sendobj, _object_op(op, "Comm.reduce"), root)

    def allreduce(self, sendobj: Any, op: Any = SUM) -> Any:
        """Reduce Python objects to every process."""
        c = self._live("Comm.allreduce")
        return c.coll.allreduce_object(c, sendobj, _object_op(op, "Comm.allreduce"))

    def scan(self, sendobj: Any, op: Any = SUM) -> Any:
        """Inclusive scan of Python objects: rank ``r`` gets ``x0 op ... op xr``."""
        c = self._live("Intracomm.scan")
        return c.coll.scan_object(c, sendobj, _object_op(op, "Intracomm.scan"))

    def exscan(self, sendobj: Any, op: Any = SUM) -> Any:
        """Exclusive scan of Python objects: rank ``r`` gets ``x0 op ... op xr-1``, rank 0 None."""
        c = self._live("Intracomm.exscan")
        return c.coll.exscan_object(c, sendobj, _object_op(op, "Intracomm.exscan"))


# -- argument checks ------------------------------------------------------------------------------


def _root(root: Any, c: Communicator, call: str) -> int:
    root = as_int(root, f"{call}: root")
    if 0 <= root < c.size:
        return root
    raise MPIException(
        ERR_ROOT,
        f"{call}: root {root} is not a rank of the communicator of size {c.size} "
        f"(valid: 0..{c.size - 1})",
    )


def _send_spec(sendbuf: Any, call: str, *, in_place: bool) -> BufferSpec:
    if sendbuf is IN_PLACE and not in_place:
        raise ValueError(
            f"{call}: MPI.IN_PLACE is not valid here (only as the root's send buffer of a "
            "gather or reduction, or the send buffer of an all-to-all collective)"
        )
    return parse_buffer(sendbuf, in_place=in_place)


def _vector(
    msg: Any, size: int, call: str, what: str, *, readonly: bool = True, in_place: bool = False
) -> VectorBufferSpec:
    """A vector message, read as mpi4py reads it (:mod:`.vector_messages`)."""
    return parse_vector_message(
        msg, size, call=call, what=what, readonly=readonly, in_place=in_place
    )


def _check_op(c: Communicator, op: Any, datatype: Datatype) -> None:
    """Fail now, on every member, if ``op`` cannot reduce ``datatype`` (not mid-collective)."""
    c.instance.op.kernel(op, datatype)


def _same_type(sent: Datatype, received: Datatype, call: str) -> None:
    if sent != received:
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
    """The stand-ins of one call (:mod:`.staging`)."""
    return Staging(call, c, datatype)


def _stage_w(
    c: Communicator, call: str, spec: BufferSpec, *, load: bool, origin: int
) -> tuple[BufferSpec, Staging]:
    """Alltoallw: every block has its own datatype, so its own staging."""
    st = _staging(c, call, spec.datatype)
    return st.receive(spec, load=load, origin=origin), st


class _Stagings:
    """The stagings of an alltoallw (one per block), finished together."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[Staging]) -> None:
        self.parts = parts

    def finish(self) -> None:
        for part in self.parts:
            part.finish()

    def request(self, inner: Any) -> Any:
        pending = [part for part in self.parts if part.pending]
        if not pending:
            return inner
        combined = Staging(pending[0].call)
        combined._after = [after for part in pending for after in part._after]
        return combined.request(inner)


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


# -- pickled objects -------------------------------------------------------------------------------


def _items(sendobj: Any, size: int, call: str) -> list[Any]:
    if sendobj is None:
        raise ValueError(f"{call}: the root must give a sequence of {size} objects, not None")
    try:
        items = list(sendobj)
    except TypeError:
        raise TypeError(
            f"{call}: expecting a sequence of {size} objects (one per rank), not "
            f"{type(sendobj).__name__}"
        ) from None
    if len(items) != size:
        raise ValueError(f"{call}: expecting {size} items (one per rank), got {len(items)}")
    return items


def _object_op(op: Any, call: str) -> Any:
    if not callable(op):
        raise TypeError(
            f"{call}: op must be an MPI.Op or a function of two objects, not {type(op).__name__}"
        )
    return op
