"""``Intracomm.Create_intercomm``: the mixin that lets an intracommunicator make an
intercommunicator with the group another leader leads.

It is a mixin of :class:`~.comm.Intracomm` (kept apart so that the communicator handles stay
small); the handle it returns is an :class:`~.intercomm.Intercomm`, a subclass of ``Comm``
defined after ``Intracomm``, hence the import inside the method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ERR_COMM
from ..errors import Exception as MPIException
from .checks import as_int
from .communicator import Communicator
from .inter_create import create_intercomm

if TYPE_CHECKING:
    from .intercomm import Intercomm


class IntercommCreation:
    """``Create_intercomm`` of :class:`~.comm.Intracomm` (``_live`` comes from ``Comm``)."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    def Create_intercomm(
        self, local_leader: int, peer_comm: Any, remote_leader: int, tag: int = 0
    ) -> Intercomm:
        """Create an inter-communicator of this group and the group ``remote_leader`` (a rank
        of ``peer_comm``) leads; collective over both groups.  Only the leaders use
        ``peer_comm``, remote_leader and ``tag``: they talk on ``peer_comm`` with ``tag``."""
        from .comm import Comm
        from .intercomm import Intercomm

        call = "Intracomm.Create_intercomm"
        c = self._live(call)
        local_leader = as_int(local_leader, f"{call}: local_leader")
        remote_leader = as_int(remote_leader, f"{call}: remote_leader")
        tag = as_int(tag, f"{call}: tag")
        peer = None
        if c.rank == local_leader:
            if not isinstance(peer_comm, Comm):
                raise TypeError(
                    f"{call}: peer_comm must be an Intracomm at the local leader, not "
                    f"{type(peer_comm).__name__}"
                )
            peer = peer_comm._live(call)
            if peer.is_inter:
                raise MPIException(
                    ERR_COMM,
                    f"{call}: peer_comm must be an intracommunicator, not an intercommunicator",
                )
        return Intercomm._of(create_intercomm(c, local_leader, peer, remote_leader, tag))
