"""Waiting until descriptors are readable, whatever their numbers.

``select.select`` refuses descriptors numbered 1024 or more, which a process holding many
connections (or a test process running many in-process worlds) reaches; ``poll`` has no such
limit.  One helper, so no caller reaches for ``select`` again.
"""

from __future__ import annotations

import select
from collections.abc import Sequence
from typing import Protocol


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


Waitable = int | _HasFileno


def readable(waitables: Sequence[Waitable], timeout: float | None) -> list[Waitable]:
    """The members of ``waitables`` that are readable (or closed by their peer), in their
    order, after waiting up to ``timeout`` seconds (``None``: until one is)."""
    poller = select.poll()
    numbers = [w if isinstance(w, int) else w.fileno() for w in waitables]
    for number in set(numbers):
        poller.register(number, select.POLLIN | select.POLLPRI)
    milliseconds = None if timeout is None else max(0, int(timeout * 1000 + 0.999))
    ready = {number for number, _events in poller.poll(milliseconds)}
    return [w for w, number in zip(waitables, numbers, strict=True) if number in ready]
