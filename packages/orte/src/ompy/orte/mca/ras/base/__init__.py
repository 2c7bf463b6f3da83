"""ras glue: select the allocating component and apply the local-host default."""

from __future__ import annotations

from ompy.opal.mca import open_framework
from ompy.opal.mca.params import Registry
from ompy.orte.launcher.hosts import local_host_name, usable_cores
from ompy.orte.launcher.job import Allocation, Node

from .. import AllocationRequest, framework


def default_allocation() -> Allocation:
    """This host alone, with one slot per core this process may use (Open MPI's default)."""
    cores = usable_cores()
    return Allocation(
        (Node(local_host_name(), cores, slots_given=False),),
        f"this host ({cores} usable cores)",
    )


def allocate(registry: Registry, request: AllocationRequest) -> Allocation:
    """The job's allocation according to the selected ras component."""
    opened = open_framework(framework, registry)
    try:
        if not opened.components:  # no ras component installed: only the default is possible
            if request.hosts or request.hostfile:
                from ompy.orte.launcher.errors import LaunchError

                raise LaunchError(
                    "--host/--hostfile need a ras component, and none is installed; "
                    "install ompy-ras-hostfile"
                )
            return default_allocation()
        _component, offer = opened.select_one(request)
        allocation = offer.module.allocate(request)
    finally:
        opened.close()
    return allocation if allocation is not None else default_allocation()
