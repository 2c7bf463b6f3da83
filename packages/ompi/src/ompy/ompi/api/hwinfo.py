"""``MPI.Get_hw_resource_info``: which hardware resources the calling process is confined to.

MPI 4.1 lets an implementation describe the hardware the calling process runs on as info keys
naming resource types; Open MPI names them with hwloc URIs (``hwloc://Package``,
``hwloc://Core``, ...) and gives each the value ``"true"`` when every processor the process may
run on lies in one resource of that type, ``"false"`` otherwise.  The answer follows the binding
at the time of the call (``os.sched_setaffinity`` changes it).  A resulting key is what a
program passes as ``mpi_hw_resource_type`` to ``Comm.Split_type``.

ompy reads the topology Linux publishes under ``/sys/devices/system`` (what hwloc reads too):
each processor's package and core siblings, its caches and the NUMA nodes.  A type the system
does not describe is left out; ``hwloc://Machine`` is always there (a process runs on one
machine).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from ompy.opal.binding import SYSFS, parse_cpulist, read_sysfs, sharing

#: The resource types reported, largest first, with hwloc's names.
TYPES = (
    "Machine",
    "Package",
    "NUMANode",
    "L3Cache",
    "L2Cache",
    "L1Cache",
    "Core",
    "PU",
)
PREFIX = "hwloc://"


def resources(cpus: Iterable[int] | None = None, root: Path = SYSFS) -> dict[str, str]:
    """The info pairs of ``Get_hw_resource_info`` for processors ``cpus`` (default: the
    caller's current binding), read from the topology under ``root``."""
    return {
        PREFIX + kind: _flag(identity is not None)
        for kind, identity in confinement(cpus, root).items()
    }


def confinement(cpus: Iterable[int] | None = None, root: Path = SYSFS) -> dict[str, str | None]:
    """For each resource type the system describes (:data:`TYPES`, largest first): the identity
    of the one resource of that type holding every processor of ``cpus`` (default: the caller's
    binding), or None when they lie in several.

    An identity names the resource within its machine (the processors it holds, as the kernel
    lists them, or the NUMA node's name); ``Comm.Split_type`` pairs it with the node.
    """
    allowed = sorted(os.sched_getaffinity(0) if cpus is None else cpus)
    if not allowed:
        raise ValueError("hardware resources: the process may run on no processor")
    readers: dict[str, Callable[[int], str | None]] = {
        "Package": lambda cpu: sharing(root, cpu, "package_cpus_list", "core_siblings_list"),
        "NUMANode": _numa_nodes(root),
        "L3Cache": lambda cpu: _cache(root, cpu, 3),
        "L2Cache": lambda cpu: _cache(root, cpu, 2),
        "L1Cache": lambda cpu: _cache(root, cpu, 1),
        "Core": lambda cpu: sharing(root, cpu, "core_cpus_list", "thread_siblings_list"),
    }
    result: dict[str, str | None] = {"Machine": "machine"}
    for kind in TYPES[1:-1]:
        owners = {readers[kind](cpu) for cpu in allowed}
        if None in owners:
            continue  # the system does not describe this type for every processor
        result[kind] = owners.pop() if len(owners) == 1 else None
    result["PU"] = str(allowed[0]) if len(allowed) == 1 else None
    return result


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _cache(root: Path, cpu: int, level: int) -> str | None:
    """The processors sharing ``cpu``'s data (or unified) cache of ``level``."""
    caches = root / "cpu" / f"cpu{cpu}" / "cache"
    try:
        entries = sorted(caches.glob("index*"))
    except OSError:
        return None
    for entry in entries:
        if read_sysfs(entry / "level") != str(level):
            continue
        if read_sysfs(entry / "type") not in ("Data", "Unified"):
            continue
        shared = read_sysfs(entry / "shared_cpu_list")
        if shared is not None:
            return shared
    return None


def _numa_nodes(root: Path) -> Callable[[int], str | None]:
    """Processor -> the name of its NUMA node (None where the system shows no nodes)."""
    node_of: dict[int, str] = {}
    for node in sorted((root / "node").glob("node[0-9]*")):
        listed = read_sysfs(node / "cpulist")
        if listed:
            for cpu in parse_cpulist(listed):
                node_of[cpu] = node.name
    return node_of.get
