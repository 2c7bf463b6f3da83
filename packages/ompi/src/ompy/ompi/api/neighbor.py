"""Neighbor collectives of ``Topocomm``: buffer, nonblocking and object forms.

A communicator with a topology (``Cartcomm``, ``Graphcomm``, ``Distgraphcomm``) exchanges data
along its edges: block ``i`` of the send message goes to out-neighbour ``i`` and block ``j`` of
the receive message comes from in-neighbour ``j``, in the order ``Topocomm.inedges`` and
``outedges`` list them (the topology's ``sources`` and ``destinations``).  So the receive
message has ``indegree`` blocks and the send message of the all-to-all forms ``outdegree``
blocks.  A ``PROC_NULL`` neighbour (a non-periodic Cartesian boundary) sends nothing and its
receive block is left as it was.  ``MPI.IN_PLACE`` is not allowed (MPI defines none for these).

The arguments are read as mpi4py reads them (the same message forms as ``Allgather(v)``,
``Alltoall(v)`` and ``Alltoallw``, cut into the number of edges rather than the size) and the
work is done by the communicator's coll table (``neighbor_allgather``, ...), so any coll
component may provide it; ``basic`` does.  Non-contiguous buffers and heterogeneous jobs go
through the same stand-ins as the other collectives (:mod:`.staging`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..constants import IN_PLACE, PROC_NULL
from ..datatype.buffer import VectorBufferSpec, parse_buffer
from ..errors import ERR_TOPOLOGY
from ..errors import Exception as MPIException
from .collective import _count_given, _per_rank, _staging, _w_specs
from .common_collectives import _one_each, _told
from .communicator import Communicator
from .families import staged_pair
from .in_place import given
from .staging import BlockwiseStaging, Staging


class NeighborCollectives:
    """The neighbor collectives of :class:`Topocomm` (``_live`` gives the communicator)."""

    __slots__ = ()
    _c: Communicator | None  # provided by Comm

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    # -- allgather -------------------------------------------------------------------------------

    def _neighbor_allgather_args(
        self, call: str, sendbuf: Any, recvbuf: Any
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        sources, _ = _edges(c, call)
        sendspec = parse_buffer(_message(sendbuf, call, "sendbuf"), readonly=True)
        recvspec = _edge_blocks(recvbuf, len(sources), call, "recvbuf", readonly=False)
        st = _staging(c, call, recvspec.datatype)
        staged = st.blocks(
            recvspec, output=True, load=PROC_NULL in sources, origins=_origins(c, sources)
        )
        return c, (st.send(sendspec), staged), st

    Neighbor_allgather, Ineighbor_allgather = staged_pair(
        _neighbor_allgather_args,
        "Topocomm.Neighbor_allgather",
        "Neighbor Gather to All.",
        "Nonblocking Neighbor Gather to All.",
    )
    Neighbor_allgatherv, Ineighbor_allgatherv = staged_pair(
        _neighbor_allgather_args,
        "Topocomm.Neighbor_allgatherv",
        "Neighbor Gather to All Vector.",
        "Nonblocking Neighbor Gather to All Vector.",
    )

    # -- all to all ------------------------------------------------------------------------------

    def _neighbor_alltoall_args(
        self, call: str, sendbuf: Any, recvbuf: Any
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        sources, destinations = _edges(c, call)
        sendspec = _edge_blocks(sendbuf, len(destinations), call, "sendbuf", readonly=True)
        recvspec = _edge_blocks(recvbuf, len(sources), call, "recvbuf", readonly=False)
        st = _staging(c, call, recvspec.datatype)
        staged = st.blocks(
            recvspec, output=True, load=PROC_NULL in sources, origins=_origins(c, sources)
        )
        return c, (st.blocks(sendspec, output=False), staged), st

    Neighbor_alltoall, Ineighbor_alltoall = staged_pair(
        _neighbor_alltoall_args,
        "Topocomm.Neighbor_alltoall",
        "Neighbor All to All.",
        "Nonblocking Neighbor All to All.",
    )
    Neighbor_alltoallv, Ineighbor_alltoallv = staged_pair(
        _neighbor_alltoall_args,
        "Topocomm.Neighbor_alltoallv",
        "Neighbor All to All Vector.",
        "Nonblocking Neighbor All to All Vector.",
    )

    def _neighbor_alltoallw_args(
        self, call: str, sendbuf: Any, recvbuf: Any
    ) -> tuple[Communicator, tuple[Any, ...], Staging]:
        c = self._live(call)
        sources, destinations = _edges(c, call)
        recvspecs = _w_specs(
            _message(recvbuf, call, "recvbuf"), len(sources), readonly=False, call=call
        )
        sendspecs = _w_specs(
            _message(sendbuf, call, "sendbuf"), len(destinations), readonly=True, call=call
        )
        st = BlockwiseStaging(call, c)  # each block has its own datatype
        sending = tuple(st.send(spec) for spec in sendspecs)
        staged = tuple(
            st.receive(spec, load=source == PROC_NULL, origin=_origin(c, source))
            for spec, source in zip(recvspecs, sources, strict=True)
        )
        return c, (sending, staged), st

    Neighbor_alltoallw, Ineighbor_alltoallw = staged_pair(
        _neighbor_alltoallw_args,
        "Topocomm.Neighbor_alltoallw",
        "Neighbor All to All General: a count, byte displacement and datatype per edge.",
        "Nonblocking Neighbor All to All General.",
    )

    # -- Python objects --------------------------------------------------------------------------

    def neighbor_allgather(self, sendobj: Any) -> list[Any]:
        """Neighbor Gather to All: one object per in-edge (``None`` from ``PROC_NULL``)."""
        c = self._live("Topocomm.neighbor_allgather")
        _edges(c, "Topocomm.neighbor_allgather")
        return c.coll.neighbor_allgather_object(c, sendobj)

    def neighbor_alltoall(self, sendobj: Sequence[Any] | None) -> list[Any]:
        """Neighbor All to All: item ``i`` goes to out-neighbour ``i``; one object per in-edge.

        ``None`` sends ``None`` along every out-edge (as mpi4py reads it).
        """
        call = "Topocomm.neighbor_alltoall"
        c = self._live(call)
        _, destinations = _edges(c, call)
        items = _told(_items, sendobj, len(destinations), call)  # a bad sequence: told to all
        return c.coll.neighbor_alltoall_object(c, items)


# -- argument checks ------------------------------------------------------------------------------


def _edges(c: Communicator, call: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The in- and out-neighbours of this member (``ERR_TOPOLOGY`` without a topology)."""
    topo = c.topo
    if topo is None:
        raise MPIException(
            ERR_TOPOLOGY,
            f"{call}: the communicator {c.name!r} has no topology (make one with Create_cart, "
            "Create_graph or Create_dist_graph(_adjacent))",
        )
    return tuple(topo.sources), tuple(topo.destinations)


def _message(buf: Any, call: str, what: str) -> Any:
    """A message of a neighbor collective: given, and not ``MPI.IN_PLACE``."""
    buf = given(buf, call, what)
    if buf is IN_PLACE:
        raise ValueError(
            f"{call}: MPI.IN_PLACE is not valid in a neighbor collective (the send and "
            "receive messages are separate buffers)"
        )
    return buf


def _edge_blocks(msg: Any, edges: int, call: str, what: str, *, readonly: bool) -> VectorBufferSpec:
    """A message of one block per edge, read as mpi4py reads a collective's block message.

    An explicit count is per block, so with no edge at all (a process without neighbours)
    the buffer holds nothing whatever the count says, as in mpi4py, which never checks a
    count against a buffer it will not touch.
    """
    msg = _message(msg, call, what)
    if edges == 0 and not call.endswith("v") and _count_given(msg):
        msg = [msg[0], msg[-1]] if len(msg) > 2 else msg[0]
    return _per_rank(msg, edges, call, what, readonly=readonly)


def _origin(c: Communicator, source: int) -> int:
    """Whose data a receive block holds: its source (this member for a ``PROC_NULL`` edge,
    whose block keeps this member's own data)."""
    return c.rank if source == PROC_NULL else source


def _origins(c: Communicator, sources: tuple[int, ...]) -> list[int]:
    """Whose data each receive block holds (with no block at all: this member's, so that a
    heterogeneous job still has an element size to agree on)."""
    return [_origin(c, source) for source in sources] or [c.rank]


def _items(sendobj: Any, count: int, call: str) -> list[Any]:
    """One object per out-edge (``None``: ``None`` along every edge, as mpi4py reads it)."""
    if sendobj is None:
        return [None] * count
    return _one_each(sendobj, count, call, "out-edge")
