"""What the sm BTL needs from the operating system and the processor, behind small functions.

- **Memory ordering.**  The lock-free rings rely on x86-64's total store order: a processor's
  stores become visible to others in program order, and its loads are not reordered with older
  loads.  So "copy the payload, then publish the new head with one aligned 8-byte store" is seen
  by the reader as "head first, payload complete", and "check the head, then copy" never reads a
  half-written payload.  :func:`lock_free_supported` admits only x86-64; elsewhere the module
  takes a real lock (a POSIX record lock on the segment file) around every ring update.
- **The one store-load pair.**  Sleeping needs Dekker's pattern (the receiver stores "sleeping"
  then loads the rings; a sender stores the head then loads "sleeping"), which even TSO may
  reorder.  The sleeper, the rare side, issues the heavy side of an asymmetric fence
  (:class:`ompy.opal.membarrier.Fence`), so the senders' fast path needs none.  Without
  membarrier a lost wake-up is bounded by the progress engine's longest sleep
  (``opal_progress_block_max_ms``).
- **Cross-memory attach.**  ``process_vm_readv`` / ``process_vm_writev`` copy directly between
  two address spaces: the single copy of large messages.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import sys

#: Machines whose memory model is TSO (stores not reordered with stores, loads with loads).
TSO_MACHINES = frozenset({"x86_64", "amd64"})

_libc = ctypes.CDLL(None, use_errno=True)

PR_SET_PTRACER = 0x59616D61
PR_SET_PTRACER_ANY = ctypes.c_ulong(-1 & 0xFFFFFFFFFFFFFFFF)
YAMA_SCOPE = "/proc/sys/kernel/yama/ptrace_scope"


def machine() -> str:
    return platform.machine().lower()


def lock_free_supported(arch: str | None = None) -> bool:
    """Whether the lock-free ring protocol is sound on this processor (TSO only)."""
    return (arch or machine()) in TSO_MACHINES


# -- cross-memory attach ----------------------------------------------------------------------


class _IoVec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_readv = getattr(_libc, "process_vm_readv", None)
_writev = getattr(_libc, "process_vm_writev", None)
for _function in (_readv, _writev):
    if _function is not None:
        _function.restype = ctypes.c_ssize_t
        _function.argtypes = [
            ctypes.c_int,
            ctypes.POINTER(_IoVec),
            ctypes.c_ulong,
            ctypes.POINTER(_IoVec),
            ctypes.c_ulong,
            ctypes.c_ulong,
        ]


class CmaError(OSError):
    """A cross-memory copy failed; ``errno`` says why (ESRCH: the peer is gone)."""


def allow_ptrace_from_anyone() -> None:
    """Let peers read our memory under Yama's restricted mode (scope 1); harmless elsewhere."""
    if sys.platform.startswith("linux"):
        _libc.prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0)


def cma_problem() -> str | None:
    """None when cross-memory attach can work here, else why not (for diagnostics)."""
    if not sys.platform.startswith("linux") or _readv is None or _writev is None:
        return "process_vm_readv is Linux-only and missing from this C library"
    try:
        with open(YAMA_SCOPE) as scope_file:
            scope = int(scope_file.read().strip() or 0)
    except (OSError, ValueError):
        scope = 0
    if scope >= 2:
        return f"{YAMA_SCOPE} is {scope}: only administrators may read other processes' memory"
    probe = ctypes.create_string_buffer(b"ompy-cma", 8)
    target = ctypes.create_string_buffer(8)
    try:
        copy(os.getpid(), ctypes.addressof(target), ctypes.addressof(probe), 8, write=False)
    except CmaError as error:
        return f"process_vm_readv failed on this process itself: {error.strerror}"
    if target.raw != probe.raw:
        return "process_vm_readv returned wrong data on this process itself"
    return None


def copy(pid: int, local: int, remote: int, length: int, *, write: bool) -> None:
    """Copy ``length`` bytes between our ``local`` address and ``remote`` in process ``pid``.

    ``write=False`` reads the peer's memory (a get); ``write=True`` writes it (a put).  The
    kernel may move fewer bytes than asked, so this loops until everything is copied.
    """
    function = _writev if write else _readv
    done = 0
    local_iov = _IoVec()
    remote_iov = _IoVec()
    while done < length:
        local_iov.iov_base = local + done
        local_iov.iov_len = length - done
        remote_iov.iov_base = remote + done
        remote_iov.iov_len = length - done
        moved = function(pid, ctypes.byref(local_iov), 1, ctypes.byref(remote_iov), 1, 0)
        if moved <= 0:
            code = ctypes.get_errno() if moved < 0 else errno.EFAULT
            raise CmaError(code, os.strerror(code))
        done += moved
