"""Which host names mean "this machine": the only hosts the local launcher can start ranks on."""

from __future__ import annotations

import functools
import os
import socket

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "127.0.0.1", "::1"})


@functools.cache
def local_host_name() -> str:
    """This machine's host name, as ranks see it in ``OMPY_NODE_NAME``."""
    return socket.gethostname()


def is_local_host(name: str) -> bool:
    """Whether ``name`` refers to this machine (loopback names, the host name or its short form).

    No DNS lookup is made: resolving names could stall start-up for seconds on a badly
    configured network, and the names users give for the local host are the ones listed here.
    """
    lowered = name.strip().lower()
    if lowered in _LOOPBACK_NAMES:
        return True
    own = local_host_name().lower()
    return lowered in {own, own.split(".", 1)[0]}


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity), the default slot count of this host."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return os.cpu_count() or 1
