"""Parsing ``--host`` lists and hostfiles (Open MPI syntax) into an allocation.

``--host`` takes comma-separated entries ``name`` or ``name:slots`` (the option may be repeated).
A hostfile has one host per line, ``name [slots=N] [max_slots=M]``; ``#`` starts a comment and
blank lines are ignored.  A host without a slot count has one slot, like in Open MPI; a host
named several times gets the sum of its slots.  Every name that means this machine (localhost,
127.0.0.1, ::1, its host name) is one node, named after this host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.hosts import is_local_host, local_host_name
from ompy.orte.launcher.job import Allocation, Node
from ompy.orte.mca.ras import AllocationRequest, RasModule

_HOSTNAME = re.compile(r"[A-Za-z0-9_.:\-\[\]]+")


def parse_host_list(entries: Iterable[str]) -> list[tuple[str, int]]:
    """``["a:2,b", "c"]`` -> ``[("a", 2), ("b", 1), ("c", 1)]``."""
    hosts = []
    for entry in entries:
        for raw in entry.split(","):
            item = raw.strip()
            if not item:
                raise LaunchError(f"--host {entry!r} has an empty host name")
            name, sep, count = item.rpartition(":")
            if not sep or not count.isdigit() or name.count(":") > 1:
                name, count = item, "1"  # no slot count (IPv6 literals keep their colons)
            if not _HOSTNAME.fullmatch(name):
                raise LaunchError(f"--host {entry!r}: {name!r} is not a host name")
            slots = int(count)
            if slots < 1:
                raise LaunchError(f"--host {entry!r}: {name!r} must have at least one slot")
            hosts.append((name, slots))
    return hosts


def parse_hostfile(path: Path) -> list[tuple[str, int]]:
    """The ``(name, slots)`` lines of a hostfile; errors name the file and the line."""
    try:
        text = path.read_text()
    except OSError as error:
        raise LaunchError(f"cannot read the hostfile {path}: {error.strerror or error}") from None
    hosts = []
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{number}"
        name, slots = words[0], 1
        if not _HOSTNAME.fullmatch(name):
            raise LaunchError(f"{where}: {name!r} is not a host name")
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep or key not in {"slots", "max_slots", "max-slots"}:
                raise LaunchError(
                    f"{where}: unexpected {word!r}; a hostfile line is "
                    f"'hostname [slots=N] [max_slots=M]'"
                )
            if not value.isdigit() or int(value) < 1:
                raise LaunchError(f"{where}: {key} must be a positive integer, got {value!r}")
            if key == "slots":
                slots = int(value)
        hosts.append((name, slots))
    if not hosts:
        raise LaunchError(f"the hostfile {path} lists no hosts")
    return hosts


def merge(hosts: Iterable[tuple[str, int]]) -> tuple[Node, ...]:
    """One node per distinct host, in order of first mention, local aliases folded together."""
    slots: dict[str, int] = {}
    for name, count in hosts:
        key = local_host_name() if is_local_host(name) else name
        slots[key] = slots.get(key, 0) + count
    return tuple(Node(name, count) for name, count in slots.items())


class HostfileRasModule(RasModule):
    """The ras module of the ``hostfile`` component."""

    def allocate(self, request: AllocationRequest) -> Allocation | None:
        if request.hosts and request.hostfile is not None:
            raise LaunchError(
                "--host and --hostfile cannot be combined: give the hosts and their slots in "
                "one of them"
            )
        if request.hosts:
            return Allocation(merge(parse_host_list(request.hosts)), "--host")
        if request.hostfile is not None:
            path = request.hostfile
            return Allocation(merge(parse_hostfile(path)), f"hostfile {path}")
        return None
