"""Binding ranks to processors: which processors a rank may run on, from its node's topology.

Two ranks of a job on a machine with spare cores run best on cores of their own: left to the
scheduler, both sometimes share one core for seconds while another idles, and every message
between them then waits for a time slice (a latency benchmark's median jumps from microseconds
to milliseconds).  Open MPI's ``mpirun`` therefore binds by default, to a core each when a job
has at most two ranks and to a package (socket) each beyond, where threaded ranks keep the
package's cores; an oversubscribed node is not bound, as its ranks must share cores anyway.
ompy follows the same defaults (``--bind-to`` / ``orte_bind_to``), decided per node from the
node's own topology by whatever starts the node's ranks
(:class:`ompy.orte.launcher.binding.NodeBinding`).

The topology comes from what Linux publishes under ``/sys/devices/system/cpu`` (as hwloc reads
it), restricted to the processors the starting process may use (``os.sched_getaffinity``: a
resource manager's cgroup or ``taskset`` is respected).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

import attrs

#: Where Linux describes processors.
SYSFS = Path("/sys/devices/system")
#: The policies of ``--bind-to``: ``auto`` is a core per rank for at most two ranks on a node,
#: else a package per rank.
POLICIES = ("auto", "none", "core", "package")


def parse_cpulist(text: str) -> list[int]:
    """The processors of a kernel cpu list such as ``"0-3,8,10-11"``."""
    cpus: list[int] = []
    for piece in text.split(","):
        part = piece.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def read_sysfs(path: Path) -> str | None:
    """A sysfs file's text, or None where the system does not have it."""
    try:
        return path.read_text().strip()
    except OSError:
        return None


def sharing(root: Path, cpu: int, name: str, older_name: str) -> str | None:
    """The processors sharing ``cpu``'s core or package, as the kernel lists them (``name``
    on current kernels, ``older_name`` before 5.x), or None where it is not described."""
    base = root / "cpu" / f"cpu{cpu}" / "topology"
    listed = read_sysfs(base / name)
    return listed if listed is not None else read_sysfs(base / older_name)


@attrs.frozen
class Topology:
    """The usable processors of a node grouped by core and by package, in processor order."""

    cores: tuple[frozenset[int], ...]
    packages: tuple[frozenset[int], ...]

    @classmethod
    def read(cls, usable: Iterable[int] | None = None, root: Path = SYSFS) -> Topology:
        """This machine's topology, restricted to ``usable`` (default: this process's
        affinity).  A processor whose core or package is not described is a core or package
        of its own."""
        allowed = sorted(os.sched_getaffinity(0) if usable is None else usable)
        return cls(
            _groups(allowed, root, "core_cpus_list", "thread_siblings_list"),
            _groups(allowed, root, "package_cpus_list", "core_siblings_list"),
        )


def _groups(
    allowed: list[int], root: Path, name: str, older_name: str
) -> tuple[frozenset[int], ...]:
    usable = set(allowed)
    groups: dict[frozenset[int], None] = {}
    for cpu in allowed:
        listed = sharing(root, cpu, name, older_name)
        members = set(parse_cpulist(listed)) if listed else {cpu}
        groups.setdefault(frozenset((members & usable) or {cpu}), None)
    return tuple(groups)


def cpuset(
    policy: str, local_rank: int, local_size: int, topology: Topology
) -> frozenset[int] | None:
    """The processors the node's ``local_rank``-th of ``local_size`` ranks is bound to, or
    None for no binding (policy ``none``, or more ranks than the node has cores: oversubscribed
    ranks share whatever there is; ranks beyond the packages share packages)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown binding policy {policy!r}; use one of {', '.join(POLICIES)}")
    if policy == "auto":
        policy = "core" if local_size <= 2 else "package"
    if policy == "none":
        return None
    units = topology.cores if policy == "core" else topology.packages
    if local_size <= len(units):
        return units[local_rank]
    if policy == "core":
        return None
    # More ranks than packages: consecutive ranks share a package, as evenly as the counts
    # allow (ranks 0-3 on package 0 and 4-7 on package 1 for eight ranks on two).
    return units[local_rank * len(units) // local_size]


def bind(pid: int, cpus: frozenset[int] | None) -> None:
    """Confine process ``pid`` (0: the caller) to ``cpus``; None leaves it as it is.  A
    binding the system refuses (a processor taken away meanwhile) leaves the process unbound
    rather than failing its start."""
    if cpus is None:
        return
    with contextlib.suppress(OSError):
        os.sched_setaffinity(pid, cpus)
