"""Collective methods of ``Intercomm``: MPI's intercommunicator semantics, mpi4py's arguments.

On an intercommunicator every collective moves data *between* the two groups:

- rooted operations (``Bcast``, ``Gather(v)``, ``Scatter(v)``, ``Reduce``) have their root in
  one group: the root passes ``root=MPI.ROOT``, the other members of its group
  ``MPI.PROC_NULL`` (they take no part but the call), and every member of the other group
  passes the root's rank in the remote group;
- ``Allgather(v)`` gives each process the blocks of the remote group, ``Alltoall(v/w)`` sends
  block ``i`` to remote rank ``i`` and receives block ``i`` from it, ``Allreduce`` gives each
  group the reduction of the other group's data, and ``Reduce_scatter(_block)`` scatters the
  reduction of one group's data over the other group (both groups give the same total count);
- ``MPI.IN_PLACE`` is not allowed, and there is no ``Scan``/``Exscan``.

The methods check their arguments as mpi4py reads them for an intercommunicator (block counts
per *remote* rank; buffers a process does not use are ignored) and call the communicator's coll
table, which the coll framework filled from a component serving intercommunicators
(``ompy-coll-inter``).  What each operation receives there is written down in
:mod:`ompy.ompi.mca.coll.interface` ("Intercommunicators").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..constants import IN_PLACE, PROC_NULL, ROOT
from ..datatype.buffer import BufferSpec, parse_buffer
from ..errors import ERR_ROOT
from ..errors import Exception as MPIException
from ..op import SUM, Op
from .checks import as_int
from .collective import (
    _block_reduction,
    _check_op,
    _counted_reduction,
    _counts,
    _per_rank,
    _reduction_send,
    _staging,
    _w_specs,
)
from .common_collectives import CommonCollectives
from .communicator import Communicator
from .families import staged_pair
from .in_place import given
from .staging import BlockwiseStaging, Staging


def _root(root: Any, c: Communicator, call: str) -> int:
    """An intercommunicator root: ROOT, PROC_NULL or a rank of the remote group."""
    root = as_int(root, f"{call}: root")
    if root in (ROOT, PROC_NULL) or 0 <= root < c.remote_size:
        return root
    raise MPIException(
        ERR_ROOT,
        f"{call}: root {root} is not valid on an intercommunicator: MPI.ROOT at the root, "
        f"MPI.PROC_NULL at the other processes of its group, the root's rank in the remote "
        f"group (0..{c.remote_size - 1}) in the other group",
    )


class InterCollectives(CommonCollectives):
    """The collective half of :class:`~.intercomm.Intercomm` (``_live`` gives the communicator;
    the barriers and the object collectives are :class:`.CommonCollectives`')."""

    __slots__ = ()

    _object_root = staticmethod(_root)

    @staticmethod
    def _gives_items(c: Communicator, root: int) -> bool:
        return root == ROOT

    # -- broadcast -------------------------------------------------------------------------------

    def _bcast_args(
        self, call: str, buf: Any, root: int = 0
    ) -> tuple[Communicator, tuple[Any, ...], Staging | None]:
        c = self._live(call)
        root = _root(root, c, call)
        if root == PROC_NULL:
            return c, (None, root), None
        spec = parse_buffer(given(buf, call, "buf"), readonly=root == ROOT)
        st = _staging(c, call, spec.datatype)
        staged = st.send(spec) if root == ROOT else st.receive(spec, origin=root)
        return c, (staged, root), st

    Bcast, Ibcast = staged_pair(
        _bcast_args,
        "Comm.Bcast",
        "Broadcast data from the root (root=ROOT) to every process of the other group.",
        "Nonblocking broadcast.",
    )

    # -- gather ----------------------------------------------------------------------------------

    def _gather_args(
        self, call: str, sendbuf: Any, recvbuf: Any, root: int = 0
    ) -> tuple[Communicator, tuple[Any, ...], Staging | None]:
        c = self._live(call)
        root = _root(root, c, call)
        if root == PROC_NULL:
            return c, (None, None, root), None
        if root == ROOT:
            recvspec = _per_rank(
                given(recvbuf, call, "recvbuf"), c.remote_size, call, "recvbuf", readonly=False
            )
            st = _staging(c, call, recvspec.datatype)
            staged = st.blocks(recvspec, output=True, load=False, origins=range(c.remote_size))
            return c, (None, staged, root), st
        sendspec = _send(sendbuf, call)
        st = _staging(c, call, sendspec.datatype)
        return c, (st.send(sendspec), None, root), st

    Gather, Igather = staged_pair(
        _gather_args,
        "Comm.Gather",
        "Gather data from every process of the other group to the root (root=ROOT).",
        "Nonblocking gather.",
    )
    Gatherv, Igatherv = staged_pair(
        _gather_args,
        "Comm.Gatherv",
        "Gather Vector: a count and displacement per rank of the other group.",
        "Nonblocking gather vector.",
    )

    # -- scatter ---------------------------------------------------------------------------------

    def _scatter_args(
        self, call: str, sendbuf: Any, recvbuf: Any, root: int = 0
    ) -> tuple[Communicator, tuple[Any, ...], Staging | None]:
        c = self._live(call)
        root = _root(root, c, call)
        if root == PROC_NULL:
            return c, (None, None, root), None
        if root == ROOT:
            sendspec = _per_rank(
                given(sendbuf, call, "sendbuf"), c.remote_size, call, "sendbuf", readonly=True
            )
            st = _staging(c, call, sendspec.datatype)
            return c, (st.blocks(sendspec, output=False), None, root), st
        recvspec = parse_buffer(_not_in_place(recvbuf, call, "recvbuf"), readonly=False)
        st = _staging(c, call, recvspec.datatype)
        return c, (None, st.receive(recvspec, origin=root), root), st

    Scatter, Iscatter = staged_pair(
        _scatter_args,
        "Comm.Scatter",
        "Scatter data from the root (root=ROOT) to every process of the other group.",
        "Nonblocking scatter.",
    )
    Scatterv, Iscatterv = staged_pair(
        _scatter_args,
        "Comm.Scatterv",
        "Scatter Vector: a count and displacement per rank of the other group.",
        "Nonblocking scatter vector.",
    )

    # -- allgather -------------------------------------------------------------------------------

    def _allgather_args(
        self, call: str, sendbuf: Any, recvbuf: Any
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        recvspec = _per_rank(
            given(recvbuf, call, "recvbuf"), c.remote_size, call, "recvbuf", readonly=False
        )
        sendspec = _send(sendbuf, call)
        st = _staging(c, call, recvspec.datatype)
        staged = st.blocks(recvspec, output=True, load=False, origins=range(c.remote_size))
        return c, (st.send(sendspec), staged), st

    Allgather, Iallgather = staged_pair(
        _allgather_args,
        "Comm.Allgather",
        "Gather to All: every process receives one block from each process of the other group.",
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
        size = c.remote_size
        recvspec = _per_rank(given(recvbuf, call, "recvbuf"), size, call, "recvbuf", readonly=False)
        sendbuf = _not_in_place(sendbuf, call)
        sendspec = _per_rank(sendbuf, size, call, "sendbuf", readonly=True)
        st = _staging(c, call, recvspec.datatype)
        staged = st.blocks(recvspec, output=True, load=False, origins=range(size))
        return c, (st.blocks(sendspec, output=False), staged), st

    Alltoall, Ialltoall = staged_pair(
        _alltoall_args,
        "Comm.Alltoall",
        "All to All: block i goes to rank i of the other group, block j comes from its rank j.",
        "Nonblocking all to all.",
    )
    Alltoallv, Ialltoallv = staged_pair(
        _alltoall_args,
        "Comm.Alltoallv",
        "All to All Vector.",
        "Nonblocking all to all vector.",
    )

    def _alltoallw_args(
        self, call: str, sendbuf: Any, recvbuf: Any
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        size = c.remote_size
        recvspecs = _w_specs(given(recvbuf, call, "recvbuf"), size, readonly=False, call=call)
        sendbuf = _not_in_place(sendbuf, call)
        sendspecs = _w_specs(sendbuf, size, readonly=True, call=call)
        st = BlockwiseStaging(call, c)
        sending = tuple(st.send(spec) for spec in sendspecs)
        staged = tuple(st.receive(spec, origin=peer) for peer, spec in enumerate(recvspecs))
        return c, (sending, staged), st

    Alltoallw, Ialltoallw = staged_pair(
        _alltoallw_args,
        "Comm.Alltoallw",
        "All to All General: a count, byte displacement and datatype per rank of the other group.",
        "Nonblocking all to all general.",
    )

    # -- reductions ------------------------------------------------------------------------------

    def _reduce_args(
        self, call: str, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0
    ) -> tuple[Communicator, tuple[Any, ...], Staging | None]:
        c = self._live(call)
        root = _root(root, c, call)
        if root == PROC_NULL:
            return c, (None, None, op, root), None
        if root == ROOT:
            recvspec = parse_buffer(given(recvbuf, call, "recvbuf"), readonly=False)
            st = _staging(c, call, recvspec.datatype, reduce=True)
            recvspec = st.receive(recvspec, reduce=True)
            _check_op(c, op, recvspec.datatype)
            return c, (None, recvspec, op, root), st
        sendspec = _send(sendbuf, call)
        st = _staging(c, call, sendspec.datatype, reduce=True)
        sendspec = st.send(sendspec, reduce=True)
        _check_op(c, op, sendspec.datatype)
        return c, (sendspec, None, op, root), st

    Reduce, Ireduce = staged_pair(
        _reduce_args,
        "Comm.Reduce",
        "Reduce the other group's data to the root (root=ROOT).",
        "Reduce to Root (nonblocking).",
    )

    def _allreduce_args(
        self, call: str, sendbuf: Any, recvbuf: Any, op: Op = SUM
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        recvspec = parse_buffer(given(recvbuf, call, "recvbuf"), readonly=False)
        sendspec = _reduction_send(_not_in_place(sendbuf, call), recvspec, call)
        st = _staging(c, call, recvspec.datatype, reduce=True)
        sendspec = st.send(sendspec, reduce=True)
        recvspec = st.receive(recvspec, reduce=True)
        _check_op(c, op, recvspec.datatype)
        return c, (sendspec, recvspec, op), st

    Allreduce, Iallreduce = staged_pair(
        _allreduce_args,
        "Comm.Allreduce",
        "Reduce to All: each group receives the reduction of the other group's data.",
        "Reduce to All (nonblocking).",
    )

    def _reduce_scatter_block_args(
        self, call: str, sendbuf: Any, recvbuf: Any, op: Op = SUM
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        recvspec = parse_buffer(given(recvbuf, call, "recvbuf"), readonly=False)
        return _block_reduction(c, call, _not_in_place(sendbuf, call), recvspec, op)

    Reduce_scatter_block, Ireduce_scatter_block = staged_pair(
        _reduce_scatter_block_args,
        "Comm.Reduce_scatter_block",
        "Reduce-Scatter Block: the other group's reduction, one block per process of this one.",
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
        parsed = parse_buffer(given(recvbuf, call, "recvbuf"), readonly=False)
        sendbuf = _not_in_place(sendbuf, call)
        if recvcounts is None:
            raise ValueError(
                f"{call}: on an intercommunicator the receive counts of this group must be "
                "given (recvcounts)"
            )
        counts = _counts(recvcounts, c.size, call)
        return _counted_reduction(c, call, parse_buffer(sendbuf), parsed, counts, op)

    Reduce_scatter, Ireduce_scatter = staged_pair(
        _reduce_scatter_args,
        "Comm.Reduce_scatter",
        "Reduce-Scatter: the other group's reduction, recvcounts[i] elements to process i.",
        "Reduce-Scatter (nonblocking).",
    )


# -- argument checks ------------------------------------------------------------------------------


def _not_in_place(buf: Any, call: str, what: str = "sendbuf") -> Any:
    """The buffer ``what``, which must be given and may not be ``MPI.IN_PLACE`` here."""
    buf = given(buf, call, what)
    if buf is IN_PLACE:
        raise ValueError(f"{call}: MPI.IN_PLACE is not valid on an intercommunicator")
    return buf


def _send(sendbuf: Any, call: str) -> BufferSpec:
    return parse_buffer(_not_in_place(sendbuf, call))


__all__ = ["InterCollectives"]
