"""What a communicator is underneath its handles: the object the PML works with.

The PML's contract: ``context_id`` (the same on every member, unique among this process's live
communicators), ``rank``, ``size``, ``world_ranks`` (communicator rank -> world rank),
``remote_world_ranks`` (the ranks point-to-point calls address -> world rank) and a writable
``pml_state``.  The API layer adds what its own calls need.

An intercommunicator is a communicator with a remote group: ``rank``, ``size``, ``world_ranks``
and ``group`` are its local group's, ``remote_world_ranks``, ``remote_size`` and
``remote_group`` the remote group's, and ``local_comm`` is a private intracommunicator over the
local group (its own context id) that the intercommunicator's collectives and constructors use
for their steps within one group.  For an intracommunicator ``remote_world_ranks`` is
``world_ranks``, ``remote_size`` is ``size`` and ``remote_group``/``local_comm`` are None.
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
        "local_comm",
        "name",
        "pml",
        "pml_state",
        "predefined",
        "rank",
        "remote_group",
        "remote_size",
        "remote_world_ranks",
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
        remote_world_ranks: tuple[int, ...] | None = None,
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
        #: The peers of point-to-point calls (module docstring): the remote group, if any.
        self.remote_world_ranks = world_ranks if remote_world_ranks is None else remote_world_ranks
        self.remote_size = len(self.remote_world_ranks)
        self.remote_group: Group | None = (
            None
            if remote_world_ranks is None
            else Group.from_procs(remote_world_ranks, instance.world_rank, instance)
        )
        #: An intercommunicator's private intracommunicator over its local group.
        self.local_comm: Communicator | None = None
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
        remote_world_ranks: tuple[int, ...] | None = None,
        local_comm: Communicator | None = None,
    ) -> Communicator:
        """A new communicator, registered with the PML before any message can use it.

        Its topology is set before the coll framework selects for it, so that components
        can decide by it (neighbor collectives need one).  With ``remote_world_ranks`` it is
        an intercommunicator whose local group is ``world_ranks``; ``local_comm`` (required
        then) is its private local communicator.
        """
        comm = cls(
            instance,
            context_id,
            world_ranks,
            name,
            predefined=predefined,
            remote_world_ranks=remote_world_ranks,
        )
        comm.topo = topo
        comm.local_comm = local_comm
        with instance.engine.lock:  # THREAD_MULTIPLE: cids is shared with other agreements
            instance.cids.add(context_id)
            instance.pml.add_comm(comm)
        comm.coll = comm_select(comm)
        return comm

    @property
    def is_inter(self) -> bool:
        """Whether this is an intercommunicator (it has a remote group)."""
        return self.remote_group is not None

    def destroy(self) -> None:
        """Drop the PML's state and give the context id back (an intercommunicator's local
        communicator with it)."""
        if self.freed:
            return
        self.freed = True
        comm_unselect(self)
        with self.instance.engine.lock:
            self.pml.del_comm(self)
            self.instance.cids.discard(self.context_id)
        if self.local_comm is not None:
            self.local_comm.destroy()

    def __repr__(self) -> str:
        return f"<Communicator {self.name!r} cid={self.context_id} rank={self.rank}/{self.size}>"
