"""The component: Open MPI's default error policy."""

from __future__ import annotations

from ompy.opal.mca import Offer
from ompy.orte.mca.errmgr import ErrmgrComponent

from . import __version__
from .policy import DefaultErrmgrModule


class DefaultErrmgrComponent(ErrmgrComponent):
    """Any rank that fails ends the whole job."""

    name = "default"
    version = __version__
    description = (
        "a rank that fails (exception, abort, non-zero exit, signal, sys.exit before the "
        "others finished, exit without finalizing) ends the job"
    )
    default_priority = 10

    def query(self, context: None) -> Offer[DefaultErrmgrModule] | None:
        return Offer(self.priority, DefaultErrmgrModule())
