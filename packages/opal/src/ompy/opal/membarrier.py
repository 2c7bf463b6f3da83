"""The heavy side of an asymmetric memory fence: Linux's ``membarrier`` system call.

Shared-memory components wake sleeping peers with Dekker's pattern (the sleeper stores
"sleeping" then loads the data words; a writer stores a data word then loads "sleeping"), the
one store-load pair that even x86-64 may reorder.  The rare side, the sleeper, issues
``membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED)``, a full barrier on every CPU that runs a
registered process, so the writers' fast path needs no fence (the asymmetric fence of liburcu
and folly).  Without membarrier, callers must bound a lost wake-up some other way (a sleep
with a timeout).

Registering costs a ``synchronize_rcu`` (about 10-20 ms) in a process that already runs
threads, and almost nothing in a single-threaded one; the registration is inherited across
``fork`` and dropped by ``exec``.  So a fork server registers once (:func:`register`, called
from the preload of the components that use fences) and every rank it forks starts
registered.
"""

from __future__ import annotations

import ctypes
import functools
import platform
import sys

#: The system call's number by machine (the same on every Linux of that machine).
SYSCALL_NUMBERS = {"x86_64": 324, "amd64": 324, "aarch64": 283, "arm64": 283}
_CMD_GLOBAL_EXPEDITED = 1 << 1
_CMD_REGISTER_GLOBAL_EXPEDITED = 1 << 2


@functools.cache
def _syscall() -> tuple[int, ctypes._CFuncPtr] | None:
    number = SYSCALL_NUMBERS.get(platform.machine().lower())
    if number is None or not sys.platform.startswith("linux"):
        return None
    function = ctypes.CDLL(None, use_errno=True).syscall
    function.restype = ctypes.c_long
    return number, function


@functools.cache
def register() -> bool:
    """Register this process for global expedited barriers (once); False if unavailable.

    The answer is cached, and the cache, like the registration, survives ``fork``.
    """
    found = _syscall()
    if found is None:
        return False
    number, syscall = found
    return syscall(number, _CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0


class Fence:
    """The heavy side of the fence for one user; registers the process on creation."""

    def __init__(self) -> None:
        self.available = register()
        self._call = _syscall() if self.available else None

    def heavy(self) -> None:
        """A full barrier on every CPU that runs a registered process (a no-op if unavailable)."""
        if self._call is not None:
            number, syscall = self._call
            syscall(number, _CMD_GLOBAL_EXPEDITED, 0, 0)
