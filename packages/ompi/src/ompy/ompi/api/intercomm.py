"""``MPI.Intercomm``: a communicator joining two disjoint groups, and how an ``Intracomm``
makes one (``Create_intercomm``).

Point-to-point calls on an intercommunicator address the *remote* group: ``Send(buf, dest)``
goes to rank ``dest`` of the other group, a received status names a rank of the other group
(the PML addresses peers through ``remote_world_ranks``).  ``Get_rank``/``Get_size``/
``Get_group`` are the local group's.  Collectives follow MPI's intercommunicator semantics
(:mod:`.inter_collective`), persistent ones too (:mod:`.inter_persistent`).  The constructors
are collective over both groups (:mod:`.inter_create`); ``Intracomm.Create_intercomm`` comes
from :mod:`.inter_creation`.
"""

from __future__ import annotations

from typing import Self

from ..accessors import GetProperty
from ..completion import CoreRequest
from ..constants import UNDEFINED
from ..errors import ERR_ARG
from ..errors import Exception as MPIException
from ..group import Group
from .attributes import copy_attributes
from .checks import as_int
from .comm import COMM_TYPE_SHARED, Comm, Intracomm
from .communicator import Communicator
from .errhandler import Errhandler, errhandler_object
from .info import INFO_NULL, Info, info_items
from .inter_collective import InterCollectives
from .inter_create import create, create_from_groups, dup, merge, split
from .inter_persistent import InterPersistentCollectives
from .request import Request


def _done(c: Communicator) -> Request:
    core = CoreRequest()
    core.finish()
    return Request._of(core, c)


class Intercomm(Comm, InterCollectives, InterPersistentCollectives):
    """Inter-communicator."""

    __slots__ = ()

    def __new__(cls, comm: Comm | None = None) -> Self:
        handle = super().__new__(cls, comm)
        c = handle._c
        if c is not None and not c.is_inter:
            raise TypeError("Intercomm(): expecting an intercommunicator, not an intracommunicator")
        return handle

    # -- the remote group ----------------------------------------------------------------------

    def Get_remote_group(self) -> Group:
        """Access the remote group associated with the inter-communicator."""
        remote = self._live("Intercomm.Get_remote_group").remote_group
        assert remote is not None  # an Intercomm handle refers to an intercommunicator
        return Group(remote)

    def Get_remote_size(self) -> int:
        """Intercommunicator remote size."""
        return self._live("Intercomm.Get_remote_size").remote_size

    remote_group = GetProperty(Get_remote_group, "Remote group.")
    remote_size = GetProperty(Get_remote_size, "Number of remote processes.")

    # -- constructors --------------------------------------------------------------------------

    @classmethod
    def Create_from_groups(  # noqa: PLR0917 (mpi4py's signature)
        cls,
        local_group: Group,
        local_leader: int,
        remote_group: Group,
        remote_leader: int,
        stringtag: str = "org.mpi4py",
        info: Info = INFO_NULL,
        errhandler: Errhandler | None = None,
    ) -> Intercomm:
        """Create inter-communicator from local and remote groups (collective over both)."""
        call = "Intercomm.Create_from_groups"
        hints = info_items(info, call)
        handler = errhandler_object(errhandler, "comm", call)
        new = create_from_groups(
            local_group,
            as_int(local_leader, f"{call}: local_leader"),
            remote_group,
            as_int(remote_leader, f"{call}: remote_leader"),
            stringtag,
        )
        new.hints = hints
        new.errhandler = handler
        return Intercomm._of(new)

    def Dup(self, info: Info | None = None) -> Self:
        """Duplicate an inter-communicator (both groups; attributes through their copy
        callbacks; the hints of ``info``, else the parent's)."""
        c = self._live("Comm.Dup")
        hints = c.hints if info is None else info_items(info, "Comm.Dup")
        new = dup(c)
        new.hints = dict(hints)
        copy_attributes(c, new, "Comm.Dup")
        return type(self)._of(new)

    def Idup(self, info: Info | None = None) -> tuple[Self, Request]:
        """Nonblocking duplicate: on an intercommunicator the duplicate is made at once (both
        groups agree on its context id through the leaders, a blocking exchange) and the
        request is already complete."""
        return self.Dup(info), _done(self._live("Comm.Idup"))

    def Idup_with_info(self, info: Info) -> tuple[Self, Request]:
        """Nonblocking duplicate with hints (made at once, as :meth:`Idup`)."""
        return self.Dup(info), _done(self._live("Comm.Idup_with_info"))

    def Split(self, color: int = 0, key: int = 0) -> Comm:
        """Split an inter-communicator by color and key: each color's processes of both
        groups; COMM_NULL where the color is UNDEFINED or the other group has no process of
        that color."""
        c = self._live("Comm.Split")
        color = as_int(color, "Comm.Split: color")
        key = as_int(key, "Comm.Split: key")
        if color < 0 and color != UNDEFINED:
            raise MPIException(ERR_ARG, f"Comm.Split: color {color} must be >= 0 or UNDEFINED")
        return Intercomm._of(split(c, color, key))

    def Create(self, group: Group) -> Comm:
        """Create an inter-communicator from a subgroup of each group (collective over both);
        COMM_NULL outside the subgroups, or if either subgroup is empty."""
        c = self._live("Comm.Create")
        if not isinstance(group, Group):
            raise TypeError(f"Comm.Create: expecting a Group, not {type(group).__name__}")
        return Intercomm._of(create(c, group, "Comm.Create"))

    def Split_type(self, split_type: int, key: int = 0, info: Info = INFO_NULL) -> Comm:
        """Split an inter-communicator by type: COMM_TYPE_SHARED pairs the processes of each
        node in one group with those of the same node in the other (COMM_NULL where the
        other group has none there); UNDEFINED gives COMM_NULL."""
        call = "Comm.Split_type"
        c = self._live(call)
        split_type = as_int(split_type, f"{call}: split_type")
        key = as_int(key, f"{call}: key")
        hints = info_items(info, call)
        if split_type == UNDEFINED:
            return Intercomm._of(split(c, UNDEFINED, key))
        if split_type != COMM_TYPE_SHARED:
            raise MPIException(
                ERR_ARG,
                f"{call}: split type {split_type} is not supported on an intercommunicator "
                "(use MPI.COMM_TYPE_SHARED or MPI.UNDEFINED)",
            )
        new = split(c, c.instance.procs[c.instance.world_rank].node_id, key)
        if new is not None:
            new.hints = hints
        return Intercomm._of(new)

    def Merge(self, high: bool = False) -> Intracomm:
        """Merge an inter-communicator into one intra-communicator: the group passing
        ``high=False`` gets the lower ranks."""
        c = self._live("Intercomm.Merge")
        return Intracomm._of(merge(c, bool(high)))
