"""The component: turns ``--host`` and ``--hostfile`` into the job's allocation."""

from __future__ import annotations

from ompy.opal.mca import Offer
from ompy.orte.mca.ras import AllocationRequest, RasComponent

from . import __version__
from .parse import HostfileRasModule


class HostfileRasComponent(RasComponent):
    """Offers for every job; without ``--host``/``--hostfile`` it leaves the default in place."""

    name = "hostfile"
    version = __version__
    description = "hosts and slots from --host lists and Open MPI style hostfiles"
    default_priority = 10

    def query(self, context: AllocationRequest) -> Offer[HostfileRasModule] | None:
        return Offer(self.priority, HostfileRasModule())
