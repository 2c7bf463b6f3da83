"""``MPI.Comm`` and ``MPI.Intracomm``: communicator handles and their management calls.

A handle refers to a :class:`~.communicator.Communicator`; ``Comm(other)`` refers to the same
one, ``Free()`` turns the handle into ``COMM_NULL``, and equality is identity of the
communicator.  ``COMM_WORLD`` and ``COMM_SELF`` are handles that MPI initialization fills in.
New communicators (``Dup``, ``Split``, ``Split_type``, ``Create``) agree on a context id over
the parent and register with the PML before anything can be sent on them.
"""

from __future__ import annotations

from typing import Any, Self

from ..accessors import GetProperty, GetSetProperty
from ..constants import UNDEFINED
from ..errors import ERR_ARG, ERR_COMM, ERR_GROUP, ERR_TAG
from ..errors import Exception as MPIException
from ..group import CONGRUENT, IDENT, SIMILAR, UNEQUAL, Group
from ..handle import Handle, predefine
from ..instance import current, world_state
from ..mca.topo import Topology
from .attributes import CommAttributes, copy_attributes, delete_attributes
from .buffering import CommBuffering
from .checks import as_int
from .cid import agree_context_id, give_back
from .collective import Collectives
from .comm_info import CommInfo
from .communicator import Communicator
from .dynamic import DynamicComm, DynamicIntracomm
from .errhandler import CommErrhandlers, Errhandler, errhandler_object
from .from_group import create_from_group, create_group
from .idup import CommIdup
from .info import INFO_NULL, Info, info_items
from .inter_create import compare as compare_inter
from .inter_creation import IntercommCreation
from .internal import allgather
from .p2p import PointToPoint
from .partitioned import PartitionedComm
from .persistent_collectives import PersistentCollectives
from .sendrecv import SendReceive
from .split_type import (
    COMM_TYPE_SHARED,  # noqa: F401 (its home before split_type.py)
    split_by_type,
)
from .topo_create import CommTopology, TopologyConstructors, handle_class


class Comm(
    CommAttributes,
    CommErrhandlers,
    CommInfo,
    CommIdup,
    PointToPoint,
    SendReceive,
    PartitionedComm,
    CommBuffering,
    CommTopology,
    DynamicComm,
    Handle,
    referent="_c",
):
    """Communication context."""

    __slots__ = ("_c",)

    _c: Communicator | None

    @classmethod
    def _of(cls, communicator: Communicator | None) -> Self:
        handle = cls.__new__(cls)
        handle._c = communicator
        return handle

    def _live(self, call: str) -> Communicator:
        c = self._c
        if c is not None and not c.freed:
            return c
        if self is COMM_WORLD or self is COMM_SELF:
            state = "finalized" if world_state().world_finalized else "not initialized"
            raise MPIException(
                ERR_COMM, f"{call}: MPI is {state}; {self._predefined_name()} is not usable"
            )
        raise MPIException(
            ERR_COMM, f"{call}: the communicator is COMM_NULL (a null or freed communicator)"
        )

    def _predefined_name(self) -> str:
        return "COMM_WORLD" if self is COMM_WORLD else "COMM_SELF"

    # -- handle semantics (equality, hash, truth, pickling, integers come from Handle) ---

    def _instance_for_handles(self) -> Any:
        c = self._c
        return c.instance if c is not None else current("Comm.handle")

    @classmethod
    def _class_for(cls, referent: object) -> type[Self]:
        if cls is Comm and referent is not None:
            assert isinstance(referent, Communicator)
            if referent.is_inter:
                from .intercomm import Intercomm

                return Intercomm  # type: ignore[return-value]
            # a topology communicator is of its topology's class
            return handle_class(referent, Intracomm)
        return cls

    def _free(self) -> None:
        c = self._c
        if c is None or c.freed:
            self._c = None
            return
        self.Free()

    def __repr__(self) -> str:
        c = self._c
        if c is None:
            return f"<{type(self).__name__} COMM_NULL>"
        return f"<{type(self).__name__} {c.name!r} rank={c.rank} size={c.size}>"

    # -- size, rank, group ---------------------------------------------------------------------

    def Get_size(self) -> int:
        """Return the number of processes in a communicator."""
        return self._live("Comm.Get_size").size

    def Get_rank(self) -> int:
        """Return the rank of this process in a communicator."""
        return self._live("Comm.Get_rank").rank

    size = GetProperty(Get_size, "Number of processes.")
    rank = GetProperty(Get_rank, "Rank of this process.")

    def Get_group(self) -> Group:
        """Access the group associated with a communicator."""
        return Group(self._live("Comm.Get_group").group)

    group = GetProperty(Get_group, "Group.")

    def Compare(self, comm: Comm) -> int:
        """Compare two communicators: IDENT, CONGRUENT, SIMILAR or UNEQUAL."""
        mine = self._live("Comm.Compare")
        if not isinstance(comm, Comm):
            raise TypeError(f"Comm.Compare: expecting a Comm, not {type(comm).__name__}")
        other = comm._live("Comm.Compare")
        if mine is other:
            return IDENT
        if mine.is_inter or other.is_inter:
            return compare_inter(mine, other)
        if mine.world_ranks == other.world_ranks:
            return CONGRUENT
        if set(mine.world_ranks) == set(other.world_ranks):
            return SIMILAR
        return UNEQUAL

    def Is_inter(self) -> bool:
        """Return whether the communicator is an inter-communicator."""
        return self._live("Comm.Is_inter").is_inter

    def Is_intra(self) -> bool:
        """Return whether the communicator is an intra-communicator."""
        return not self._live("Comm.Is_intra").is_inter

    is_inter = GetProperty(Is_inter, "Is inter-communicator.")
    is_intra = GetProperty(Is_intra, "Is intra-communicator.")

    # -- names and attributes ------------------------------------------------------------------

    def Get_name(self) -> str:
        """Get the print name for this communicator ("MPI_COMM_NULL" for a null one, whose
        name MPI defines too)."""
        if self._c is None and self is not COMM_WORLD and self is not COMM_SELF:
            return "MPI_COMM_NULL"
        return self._live("Comm.Get_name").name

    def Set_name(self, name: str) -> None:
        """Set the print name for this communicator."""
        if not isinstance(name, str):
            raise TypeError(f"Comm.Set_name: the name must be a str, not {type(name).__name__}")
        self._live("Comm.Set_name").name = name

    name = GetSetProperty(Get_name, Set_name, "Print name.")

    # -- constructors --------------------------------------------------------------------------

    def _new(
        self,
        parent: Communicator,
        world_ranks: tuple[int, ...] | None,
        how: str,
        hints: dict[str, str] | None = None,
        topo: Topology | None = None,
    ) -> Comm:
        """Agree on a context id over ``parent`` and build the new communicator (if a member).

        It inherits the parent's error handler and has ``hints`` (none by default) and the
        process topology ``topo`` (none by default).
        """
        cid = agree_context_id(parent)
        if world_ranks is None:
            give_back(parent.instance, cid)
            return type(self)._of(None)
        name = f"MPI COMMUNICATOR {cid} {how} FROM {parent.context_id}"
        new = Communicator.create(parent.instance, cid, world_ranks, name, topo=topo)
        new.session = parent.session
        new.errhandler = parent.errhandler
        new.hints = dict(hints or {})
        return type(self)._of(new)

    def Dup(self, info: Info | None = None) -> Self:
        """Duplicate a communicator: its attributes go through their copy callbacks, and it
        has the hints of ``info`` (else the parent's)."""
        c = self._live("Comm.Dup")
        hints = c.hints if info is None else info_items(info, "Comm.Dup")
        dup = self._new(c, c.world_ranks, "DUP", hints, c.topo)
        if dup._c is not None:
            copy_attributes(c, dup._c, "Comm.Dup")
        return dup  # type: ignore[return-value]

    def Clone(self) -> Self:
        """Clone an existing communicator."""
        return self.Dup()

    def Split(self, color: int = 0, key: int = 0) -> Comm:
        """Split communicator by color and key; COMM_NULL where color is UNDEFINED."""
        c = self._live("Comm.Split")
        color = as_int(color, "Comm.Split: color")
        key = as_int(key, "Comm.Split: key")
        if color < 0 and color != UNDEFINED:
            raise MPIException(ERR_ARG, f"Comm.Split: color {color} must be >= 0 or UNDEFINED")
        return self._split(c, color, key, "SPLIT")

    def _split(
        self, c: Communicator, color: int, key: int, how: str, hints: dict[str, str] | None = None
    ) -> Comm:
        pairs = allgather(c, (color, key))
        if color == UNDEFINED:
            return self._new(c, None, how)
        members = sorted((k, r) for r, (col, k) in enumerate(pairs) if col == color)
        return self._new(c, tuple(c.world_ranks[r] for _, r in members), how, hints)

    def Split_type(self, split_type: int, key: int = 0, info: Info = INFO_NULL) -> Comm:
        """Split communicator by type (node, hardware resource or process set; see
        :mod:`.split_type`)."""
        c = self._live("Comm.Split_type")
        split_type = as_int(split_type, "Comm.Split_type: split_type")
        key = as_int(key, "Comm.Split_type: key")
        return split_by_type(self, c, split_type, key, info)

    def Create(self, group: Group) -> Comm:
        """Create communicator from group (collective over this communicator)."""
        c = self._live("Comm.Create")
        if not isinstance(group, Group):
            raise TypeError(f"Comm.Create: expecting a Group, not {type(group).__name__}")
        procs = group.procs if group.Get_size() else ()
        outside = [p for p in procs if p not in c.group.members.ranks]
        if outside:
            raise MPIException(
                ERR_GROUP,
                f"Comm.Create: the group holds processes outside the communicator (world ranks "
                f"{outside}); it must be a subgroup of comm.Get_group()",
            )
        # every process is a member of this communicator: its world rank is known here
        index = c.group.members.ranks
        world_ranks = tuple(c.world_ranks[index[p]] for p in procs)
        member = c.instance.world_rank in world_ranks
        return self._new(c, world_ranks if member else None, "CREATE")

    def Free(self) -> None:
        """Free a communicator."""
        c = self._live("Comm.Free")
        if c.predefined:
            raise MPIException(ERR_COMM, f"Comm.Free: {c.name} is predefined and cannot be freed")
        delete_attributes(c)  # while the communicator still works (callbacks may use it)
        c.destroy()
        self._c = None

    # -- abort ---------------------------------------------------------------------------------

    def Abort(self, errorcode: int = 0) -> None:
        """Terminate the MPI execution environment (every process of the job)."""
        c = self._live("Comm.Abort")
        errorcode = as_int(errorcode, "Comm.Abort: errorcode")
        c.instance.abort(errorcode, f"Comm.Abort({errorcode}) called on {c.name} by rank {c.rank}")


class Intracomm(
    Comm,
    Collectives,
    PersistentCollectives,
    TopologyConstructors,
    IntercommCreation,
    DynamicIntracomm,
):
    """Intra-communicator."""

    __slots__ = ()

    def __new__(cls, comm: Comm | None = None) -> Self:
        handle = super().__new__(cls, comm)
        c = handle._c
        if c is not None and c.is_inter:
            raise TypeError("Intracomm(): expecting an intracommunicator, not an intercommunicator")
        return handle

    def Create_group(self, group: Group, tag: int = 0) -> Intracomm:
        """Create communicator from group (called by the group's members only)."""
        c = self._live("Comm.Create_group")
        tag = as_int(tag, "Comm.Create_group: tag")
        if not 0 <= tag <= c.tag_ub:
            raise MPIException(
                ERR_TAG, f"Comm.Create_group: tag {tag} is not in 0..{c.tag_ub} (TAG_UB)"
            )
        new = create_group(c, group, tag)
        new.errhandler = c.errhandler
        return Intracomm._of(new)

    @classmethod
    def Create_from_group(
        cls,
        group: Group,
        stringtag: str = "org.mpi4py",
        info: Info = INFO_NULL,
        errhandler: Errhandler | None = None,
    ) -> Intracomm:
        """Create communicator from group (collective over the group's members only)."""
        hints = info_items(info, "Intracomm.Create_from_group")
        handler = errhandler_object(errhandler, "comm", "Intracomm.Create_from_group")
        new = create_from_group(group, stringtag)
        new.hints = hints
        new.errhandler = handler
        return Intracomm._of(new)


#: Null communicator handle (registered first: null handles pickle as it).
COMM_NULL = predefine(Comm(), "COMM_NULL", 2)
#: World communicator (Open MPI's Fortran handles: COMM_WORLD 0, COMM_SELF 1, COMM_NULL 2).
COMM_WORLD = predefine(Intracomm(), "COMM_WORLD", 0)
#: Self communicator.
COMM_SELF = predefine(Intracomm(), "COMM_SELF", 1)
