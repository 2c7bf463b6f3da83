"""The component: inside a Slurm allocation, the allocation is the job's set of hosts."""

from __future__ import annotations

import os

from ompy.opal.mca import Offer
from ompy.orte.mca.ras import AllocationRequest, RasComponent, RasModule

from . import __version__
from .allocation import SlurmRasModule, in_allocation


class SlurmRasComponent(RasComponent):
    """Offers inside a Slurm allocation unless ``--host``/``--hostfile`` chose the hosts.

    Its priority is above ras hostfile's, so that ``ompy run`` in ``salloc`` or ``sbatch``
    uses the allocation; an explicit host list still goes to ras hostfile.
    """

    name = "slurm"
    version = __version__
    description = "hosts and slots of the Slurm allocation (SLURM_JOB_NODELIST, TASKS_PER_NODE)"
    default_priority = 50

    def query(self, context: AllocationRequest) -> Offer[RasModule] | None:
        if context.hosts or context.hostfile is not None or not in_allocation(os.environ):
            return None
        return Offer(self.priority, SlurmRasModule(os.environ))
