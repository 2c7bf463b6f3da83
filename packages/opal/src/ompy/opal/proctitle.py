"""What ``ps`` and ``top`` show for an ompy process: which rank of which job it is.

Ranks forked by the fork server would otherwise all show the launcher's command line (they are
copies of a process that was started as ``ompy run ...``), and the fork server itself would look
like a second launcher.  Linux shows two things: the *command name* (``ps -o comm``, ``top``),
which ``prctl(PR_SET_NAME)`` sets (15 bytes at most), and the *command line* (``ps -f``,
``ps aux``, ``/proc/PID/cmdline``), which the kernel reads from the process's own argument area
between ``arg_start`` and ``arg_end`` of ``/proc/self/stat``.  That area cannot grow, so a title
is cut to fit it; it is rewritten through ``/proc/self/mem``, which a process may always write
for itself, so no compiled code is needed.  The interpreter keeps its own copies of the
arguments (``sys.argv``, ``sys.orig_argv``), which do not change.

Setting a title is a courtesy: where any of this is unavailable (another OS, a hardened
``/proc``), nothing happens.
"""

from __future__ import annotations

import contextlib
import ctypes
import sys

#: prctl's option to set the calling thread's command name.
PR_SET_NAME = 15
#: The kernel keeps 16 bytes of command name, the last one NUL.
COMM_MAX = 15
#: Fields 48 and 49 of /proc/self/stat (1-based), counted after the parenthesised name.
_ARG_START_FIELD, _ARG_END_FIELD = 48 - 3, 49 - 3


def set_title(title: str, *, name: str | None = None) -> None:
    """Show ``title`` as this process's command line and ``name`` (or the title's first
    word) as its command name; a title longer than the argument area is cut to fit."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, ValueError, IndexError):
        _set_command_line(title)
    with contextlib.suppress(OSError, AttributeError):
        _set_command_name((name or title.split(" ", 1)[0])[:COMM_MAX])


def argument_area() -> tuple[int, int]:
    """The start and end address of this process's command-line area."""
    with open("/proc/self/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return int(fields[_ARG_START_FIELD]), int(fields[_ARG_END_FIELD])


def _set_command_line(title: str) -> None:
    start, end = argument_area()
    size = end - start
    if size < 2:
        return
    text = title.encode("utf-8", "replace")[: size - 1]
    with open("/proc/self/mem", "r+b", buffering=0) as memory:
        memory.seek(start)
        memory.write(text + b"\0" * (size - len(text)))


def _set_command_name(name: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)  # the symbols of the process: libc among them
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name.encode("utf-8", "replace")), 0, 0, 0)
