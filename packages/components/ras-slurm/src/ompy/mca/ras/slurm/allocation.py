"""Reading a Slurm allocation from the variables Slurm gives every process of a job.

``SLURM_JOB_NODELIST`` (older Slurm: ``SLURM_NODELIST``) is the allocation's hostlist and
``SLURM_TASKS_PER_NODE`` how many tasks each of those nodes takes, run-length encoded
(``2(x3),1``); both are expanded by :mod:`ompy.orte.hostlist`.  Each node gets its task count as
slots, as Open MPI's ras slurm does, so ``ompy run`` without ``-n`` starts as many ranks as the
allocation has tasks.  A node that is this machine is named as the launcher names this machine,
so that the local launcher may start its ranks.
"""

from __future__ import annotations

from collections.abc import Mapping

from ompy.orte.hostlist import HostlistError, expand_counts, expand_hostlist
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.hosts import is_local_host, local_host_name
from ompy.orte.launcher.job import Allocation, Node
from ompy.orte.mca.ras import AllocationRequest, RasModule

#: The allocation's hosts, newest name first.
NODELIST_VARIABLES = ("SLURM_JOB_NODELIST", "SLURM_NODELIST")
TASKS_VARIABLE = "SLURM_TASKS_PER_NODE"
JOB_VARIABLES = ("SLURM_JOB_ID", "SLURM_JOBID")


def in_allocation(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` is that of a process inside a Slurm allocation."""
    return any(environ.get(name) for name in NODELIST_VARIABLES)


def read_allocation(environ: Mapping[str, str]) -> Allocation:
    """The allocation ``environ`` describes; :class:`LaunchError` names a bad variable."""
    nodelist_var = next((name for name in NODELIST_VARIABLES if environ.get(name)), None)
    if nodelist_var is None:
        raise LaunchError(f"not in a Slurm allocation: {NODELIST_VARIABLES[0]} is not set")
    try:
        names = expand_hostlist(environ[nodelist_var])
    except HostlistError as error:
        raise LaunchError(f"{nodelist_var}: {error}") from None
    tasks_text = environ.get(TASKS_VARIABLE)
    if not tasks_text:
        raise LaunchError(
            f"{TASKS_VARIABLE} is not set, so the slots of the Slurm allocation "
            f"{environ[nodelist_var]!r} are unknown"
        )
    try:
        counts = expand_counts(tasks_text)
    except HostlistError as error:
        raise LaunchError(f"{TASKS_VARIABLE}: {error}") from None
    if len(counts) != len(names):
        raise LaunchError(
            f"{TASKS_VARIABLE}={tasks_text!r} gives {len(counts)} task counts, but "
            f"{nodelist_var}={environ[nodelist_var]!r} names {len(names)} nodes"
        )
    if len(set(names)) != len(names):
        raise LaunchError(f"{nodelist_var}={environ[nodelist_var]!r} names a node twice")
    nodes = []
    for name, count in zip(names, counts, strict=True):
        if count < 1:
            raise LaunchError(f"{TASKS_VARIABLE}={tasks_text!r} gives node {name!r} no task")
        nodes.append(Node(local_host_name() if is_local_host(name) else name, count))
    jobid = next((environ[name] for name in JOB_VARIABLES if environ.get(name)), "?")
    return Allocation(tuple(nodes), f"Slurm job {jobid} ({environ[nodelist_var]})")


class SlurmRasModule(RasModule):
    """The ras module of the ``slurm`` component: the allocation in the given environment."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = dict(environ)

    def allocate(self, request: AllocationRequest) -> Allocation | None:
        if request.hosts or request.hostfile is not None:
            return None  # the user chose hosts; ras hostfile reads them
        return read_allocation(self._environ)
