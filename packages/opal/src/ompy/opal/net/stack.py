"""Which network stack this process uses: the kernel it runs on and its network namespace.

Two processes with the same identity share every address and port: an address of one is an
address of the other, and a port one listens on is reachable by the other through any of
them.  The tcp BTL uses it where node identity is not enough: two "nodes" of a resource manager
may be one machine (several slurmd on one host), and an address of this host is then a way to
such a peer after all, while for a peer on another stack it never is (it would reach this
host instead; docker0's 172.17.0.1 is on every host).
"""

from __future__ import annotations

import functools
import os


@functools.cache
def stack_identity() -> str:
    """``<boot id>/<network namespace inode>``, or "" when either cannot be read (then no
    other process is known to share the stack)."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            boot = file.read().strip()
        namespace = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return ""
    return f"{boot}/{namespace}" if boot else ""


def same_stack(mine: str, theirs: str) -> bool:
    """Whether two identities are known to be one network stack (unknown ones never are)."""
    return bool(mine) and mine == theirs
