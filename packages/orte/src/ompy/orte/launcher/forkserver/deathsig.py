"""Tying a child's life to its parent's: ``PR_SET_PDEATHSIG`` through ``prctl``.

The kernel sends the signal when the *thread* that forked the child ends, so children must be
forked from a thread that lives as long as the process (the launcher's and the fork server's
main threads).
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

from ompy.opal.binding import bind

_PR_SET_PDEATHSIG = 1

Prctl = Callable[[int, int, int, int, int], int]


def load_prctl() -> Prctl | None:
    """libc's ``prctl`` (resolved ahead, so a child needs no import or lookup), or ``None``."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def die_with_parent(parent_pid: int, prctl: Prctl | None) -> None:
    """In a fresh child: ask for SIGKILL when the parent dies; exit at once if it already has.

    Only calls ``prctl``, ``getppid`` and ``_exit`` (no locks, no imports), so it is safe
    between fork and exec in a process with threads.
    """
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(137)


def preexec_die_with_parent(
    parent_pid: int, prctl: Prctl | None, cpus: frozenset[int] | None = None
) -> Callable[[], None]:
    """The ``preexec_fn`` that runs :func:`die_with_parent` in a ``subprocess`` child, and
    binds it to ``cpus`` (a rank's binding, :mod:`ompy.opal.binding`) before it runs anything:
    threads it starts later inherit the binding."""

    def preexec() -> None:
        die_with_parent(parent_pid, prctl)
        bind(0, cpus)

    return preexec
