"""What a communicator is underneath its handles: the object the PML works with.

The PML's contract: ``context_id`` (the same on every member, unique among this process's live
communicators), ``rank``, ``size``, ``world_ranks`` (communicator rank -> world rank) and a
writable ``pml_state``.  The API layer adds what its own calls need.
"""

from __future__ import annotations

from typing import Any

from ..attributes import AttributeSet
from ..errhandler import ERRORS_RETURN, ErrhandlerObject
from ..group import Group
from ..instance import Instance
from ..mca.coll.base import CollTable, comm_select, comm_unselect, unselected_table
from ..mca.topo import Topology


class Communicator:
    """One communicator of this process (shared by every handle that refers to it)."""

    __slots__ = (
        "__weakref__",
        "attributes",
        "bsend",
        "channels",
        "coll",
        "context_id",
        "engine",
        "errhandler",
        "freed",
        "group",
        "hints",
        "instance",
        "name",
        "pml",
        "pml_state",
        "predefined",
        "rank",
        "session",
        "size",
        "tag_ub",
        "topo",
        "world_ranks",
    )

    def __init__(
        self,
        instance: Instance,
        context_id: int,
        world_ranks: tuple[int, ...],
        name: str,
        *,
        predefined: bool = False,
    ) -> None:
        self.instance = instance
        self.pml = instance.pml
        self.engine = instance.engine
        self.tag_ub = instance.pml.max_tag
        self.context_id = context_id
        self.world_ranks = world_ranks
        self.size = len(world_ranks)
        self.rank = world_ranks.index(instance.world_rank)
        self.group = Group.from_procs(world_ranks, instance.world_rank, instance)
        self.name = name
        self.predefined = predefined
        self.freed = False
        self.pml_state: Any = None
        #: Per destination: how many pickled messages with out-of-band buffers went there.
        self.channels: dict[int, int] = {}
        #: The collective operations' function table (the coll framework's selection, made by
        #: ``create``; until then a table in which every operation says nobody implements it).
        self.coll: CollTable = unselected_table(name)
        #: What a failing call on this communicator does (see :mod:`.errhandler`); new
        #: communicators inherit their parent's.
        self.errhandler: ErrhandlerObject = ERRORS_RETURN
        #: The info hints in force (``Comm.Set_info``/``Get_info``, ``Dup_with_info``).
        self.hints: dict[str, str] = {}
        #: The attributes cached on this communicator (``Comm.Set_attr``).
        self.attributes = AttributeSet()
        #: This communicator's own buffered-send buffer (``Comm.Attach_buffer``), if any.
        self.bsend: Any = None
        #: The session this communicator derives from (None: the world model); its buffer
        #: serves buffered sends when the communicator has none (:mod:`.buffering`).
        self.session: Any = None
        #: The process topology (Cartesian, graph, distributed graph), or None.
        self.topo: Topology | None = None

    @classmethod
    def create(
        cls,
        instance: Instance,
        context_id: int,
        world_ranks: tuple[int, ...],
        name: str,
        *,
        predefined: bool = False,
        topo: Topology | None = None,
    ) -> Communicator:
        """A new communicator, registered with the PML before any message can use it.

        Its topology is set before the coll framework selects for it, so that components
        can decide by it (neighbor collectives need one).
        """
        comm = cls(instance, context_id, world_ranks, name, predefined=predefined)
        comm.topo = topo
        with instance.engine.lock:  # THREAD_MULTIPLE: cids is shared with other agreements
            instance.cids.add(context_id)
            instance.pml.add_comm(comm)
        comm.coll = comm_select(comm)
        return comm

    def destroy(self) -> None:
        """Drop the PML's state and give the context id back."""
        if self.freed:
            return
        self.freed = True
        comm_unselect(self)
        with self.instance.engine.lock:
            self.pml.del_comm(self)
            self.instance.cids.discard(self.context_id)

    def __repr__(self) -> str:
        return f"<Communicator {self.name!r} cid={self.context_id} rank={self.rank}/{self.size}>"
