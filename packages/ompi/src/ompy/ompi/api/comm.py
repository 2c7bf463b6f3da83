"""``MPI.Comm`` and ``MPI.Intracomm``: communicator handles and their management calls.

A handle refers to a :class:`~.communicator.Communicator`; ``Comm(other)`` refers to the same
one, ``Free()`` turns the handle into ``COMM_NULL``, and equality is identity of the
communicator.  ``COMM_WORLD`` and ``COMM_SELF`` are handles that MPI initialization fills in.
New communicators (``Dup``, ``Split``, ``Split_type``, ``Create``) agree on a context id over
the parent and register with the PML before anything can be sent on them.
"""

from __future__ import annotations

from typing import Any, Self

from ..constants import (
    APPNUM,
    HOST,
    IO,
    LASTUSEDCODE,
    PROC_NULL,
    TAG_UB,
    UNDEFINED,
    UNIVERSE_SIZE,
    WTIME_IS_GLOBAL,
)
from ..errors import ERR_ARG, ERR_COMM, ERR_GROUP, ERR_KEYVAL, ERR_LASTCODE, ERR_TAG
from ..errors import Exception as MPIException
from ..group import CONGRUENT, IDENT, SIMILAR, UNEQUAL, Group
from ..handle import Handle
from ..instance import world_state
from .checks import as_int
from .cid import agree_context_id, give_back
from .collective import Collectives
from .communicator import Communicator
from .from_group import create_from_group, create_group
from .internal import allgather
from .p2p import PointToPoint
from .session import hints

#: ``Split_type`` by shared-memory domain: the processes of one node (Open MPI's value).
COMM_TYPE_SHARED = 0


class Comm(PointToPoint, Handle, referent="_c"):
    """Communication context."""

    __slots__ = ("_c",)

    def __init__(self, comm: Comm | None = None) -> None:
        if comm is None:
            self._c: Communicator | None = None
        elif isinstance(comm, Comm):
            self._c = comm._c
        else:
            raise TypeError(
                f"{type(self).__name__}() takes a Comm to refer to, not {type(comm).__name__}"
            )

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

    # -- handle semantics (equality, hash and truth come from Handle) ---------------------

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

    @property
    def size(self) -> int:
        """Number of processes."""
        return self.Get_size()

    @property
    def rank(self) -> int:
        """Rank of this process."""
        return self.Get_rank()

    def Get_group(self) -> Group:
        """Access the group associated with a communicator."""
        return Group(self._live("Comm.Get_group").group)

    @property
    def group(self) -> Group:
        """Group."""
        return self.Get_group()

    def Compare(self, comm: Comm) -> int:
        """Compare two communicators: IDENT, CONGRUENT, SIMILAR or UNEQUAL."""
        mine = self._live("Comm.Compare")
        if not isinstance(comm, Comm):
            raise TypeError(f"Comm.Compare: expecting a Comm, not {type(comm).__name__}")
        other = comm._live("Comm.Compare")
        if mine is other:
            return IDENT
        if mine.world_ranks == other.world_ranks:
            return CONGRUENT
        if set(mine.world_ranks) == set(other.world_ranks):
            return SIMILAR
        return UNEQUAL

    def Is_inter(self) -> bool:
        """Return whether the communicator is an inter-communicator."""
        self._live("Comm.Is_inter")
        return False

    def Is_intra(self) -> bool:
        """Return whether the communicator is an intra-communicator."""
        self._live("Comm.Is_intra")
        return True

    @property
    def is_inter(self) -> bool:
        """Is inter-communicator."""
        return self.Is_inter()

    @property
    def is_intra(self) -> bool:
        """Is intra-communicator."""
        return self.Is_intra()

    # -- names and attributes ------------------------------------------------------------------

    def Get_name(self) -> str:
        """Get the print name for this communicator."""
        return self._live("Comm.Get_name").name

    def Set_name(self, name: str) -> None:
        """Set the print name for this communicator."""
        if not isinstance(name, str):
            raise TypeError(f"Comm.Set_name: the name must be a str, not {type(name).__name__}")
        self._live("Comm.Set_name").name = name

    @property
    def name(self) -> str:
        """Print name."""
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    def Get_attr(self, keyval: int) -> int | bool | None:
        """Retrieve a predefined attribute value (TAG_UB, HOST, IO, WTIME_IS_GLOBAL, ...)."""
        c = self._live("Comm.Get_attr")
        keyval = as_int(keyval, "Comm.Get_attr: keyval")
        values: dict[int, Any] = {
            TAG_UB: c.tag_ub,
            HOST: PROC_NULL,
            IO: c.rank,
            WTIME_IS_GLOBAL: False,
            APPNUM: 0,
            UNIVERSE_SIZE: c.instance.world_size,
            LASTUSEDCODE: ERR_LASTCODE,
        }
        try:
            return values[keyval]
        except KeyError:
            raise MPIException(
                ERR_KEYVAL,
                f"Comm.Get_attr: {keyval} is not a predefined attribute key (TAG_UB, HOST, IO, "
                "WTIME_IS_GLOBAL, APPNUM, UNIVERSE_SIZE, LASTUSEDCODE); user keyvals are not "
                "supported",
            ) from None

    # -- constructors --------------------------------------------------------------------------

    def _new(self, parent: Communicator, world_ranks: tuple[int, ...] | None, how: str) -> Comm:
        """Agree on a context id over ``parent`` and build the new communicator (if a member)."""
        cid = agree_context_id(parent)
        if world_ranks is None:
            give_back(parent.instance, cid)
            return type(self)._of(None)
        name = f"MPI COMMUNICATOR {cid} {how} FROM {parent.context_id}"
        return type(self)._of(Communicator.create(parent.instance, cid, world_ranks, name))

    def Dup(self, info: Any = None) -> Comm:
        """Duplicate a communicator."""
        c = self._live("Comm.Dup")
        return self._new(c, c.world_ranks, "DUP")

    def Clone(self) -> Comm:
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

    def _split(self, c: Communicator, color: int, key: int, how: str) -> Comm:
        pairs = allgather(c, (color, key))
        if color == UNDEFINED:
            return self._new(c, None, how)
        members = sorted((k, r) for r, (col, k) in enumerate(pairs) if col == color)
        return self._new(c, tuple(c.world_ranks[r] for _, r in members), how)

    def Split_type(self, split_type: int, key: int = 0, info: Any = None) -> Comm:
        """Split communicator by type: COMM_TYPE_SHARED groups the processes of each node."""
        c = self._live("Comm.Split_type")
        split_type = as_int(split_type, "Comm.Split_type: split_type")
        key = as_int(key, "Comm.Split_type: key")
        if split_type == UNDEFINED:
            return self._split(c, UNDEFINED, key, "SPLIT_TYPE")
        if split_type != COMM_TYPE_SHARED:
            raise MPIException(
                ERR_ARG,
                f"Comm.Split_type: split type {split_type} is not supported (use "
                "MPI.COMM_TYPE_SHARED or MPI.UNDEFINED)",
            )
        node = c.instance.procs[c.instance.world_rank].node_id
        return self._split(c, node, key, "SPLIT_TYPE")

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
        world_ranks = tuple(procs) if c.instance.world_rank in procs else None
        return self._new(c, world_ranks, "CREATE")

    def Free(self) -> None:
        """Free a communicator."""
        c = self._live("Comm.Free")
        if c.predefined:
            raise MPIException(ERR_COMM, f"Comm.Free: {c.name} is predefined and cannot be freed")
        c.destroy()
        self._c = None

    # -- abort ---------------------------------------------------------------------------------

    def Abort(self, errorcode: int = 0) -> None:
        """Terminate the MPI execution environment (every process of the job)."""
        c = self._live("Comm.Abort")
        errorcode = as_int(errorcode, "Comm.Abort: errorcode")
        c.instance.abort(errorcode, f"Comm.Abort({errorcode}) called on {c.name} by rank {c.rank}")


class Intracomm(Comm, Collectives):
    """Intra-communicator."""

    __slots__ = ()

    def Create_group(self, group: Group, tag: int = 0) -> Intracomm:
        """Create communicator from group (called by the group's members only)."""
        c = self._live("Comm.Create_group")
        tag = as_int(tag, "Comm.Create_group: tag")
        if not 0 <= tag <= c.tag_ub:
            raise MPIException(
                ERR_TAG, f"Comm.Create_group: tag {tag} is not in 0..{c.tag_ub} (TAG_UB)"
            )
        return Intracomm._of(create_group(c, group, tag))

    @classmethod
    def Create_from_group(
        cls,
        group: Group,
        stringtag: str = "org.mpi4py",
        info: Any = None,
        errhandler: Any = None,
    ) -> Intracomm:
        """Create communicator from group (collective over the group's members only)."""
        hints(info, "Intracomm.Create_from_group")
        return Intracomm._of(create_from_group(group, stringtag))


COMM_NULL = Comm()
COMM_WORLD = Intracomm()
COMM_SELF = Intracomm()
