"""One readiness poller per process for all tcp sockets, polled by the progress engine.

On Linux it is an ``epoll`` object whose own file descriptor becomes readable when any socket is
ready, so the progress engine sleeps on that single fd.  Elsewhere it falls back to ``poll`` and
registers every socket with the engine instead.  ``poll()`` is the component's progress function:
it never blocks, and ignores nested calls (a receive callback that waits would otherwise re-enter
a half-parsed connection).

Deadlines (a stranger's handshake, a listener paused after ``EMFILE``) are not timers of their
own: whoever needs one calls :meth:`Poller.sweep_by` and the poller calls its ``sweeper`` on the
first poll at or after that time.  The progress engine never sleeps longer than
``opal_progress_block_max_ms``, so a deadline is met within that much; with no deadline
pending the cost on each poll is one attribute test.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable

from ompy.opal.progress import ProgressEngine

READ = select.POLLIN
WRITE = select.POLLOUT
#: Events that mean "go and read": data, hang-up or error all surface through recv.
READABLE = select.POLLIN | select.POLLHUP | select.POLLERR

Handler = Callable[[int], int]
#: With only idle sockets (listeners) registered, poll them on one progress pass in this many.
IDLE_POLL_EVERY = 64


class Poller:
    """Sockets, their current handler, and the non-blocking poll that dispatches to them."""

    def __init__(self, engine: ProgressEngine) -> None:
        self.engine = engine
        self.handlers: dict[int, Handler] = {}
        epoll = getattr(select, "epoll", None)
        if epoll is not None:
            self._poller = epoll()
            self._epoll = True
            engine.register_fd(self._poller.fileno())
        else:  # pragma: no cover - non-Linux
            self._poller = select.poll()
            self._epoll = False
        self._poll = self._poller.poll
        self._busy = False
        #: Sockets registered with ``idle=True`` (listeners): alone, they are polled rarely.
        self._idle_fds: set[int] = set()
        self._skipped = 0
        #: When :attr:`sweeper` is due (``time.monotonic``), or None when nothing is pending.
        self.sweep_at: float | None = None
        #: Called with the current time when :attr:`sweep_at` has passed; returns how many
        #: things it did (connections closed, listeners resumed), counted as events.
        self.sweeper: Callable[[float], int] | None = None

    def add(self, fd: int, events: int, handler: Handler, *, idle: bool = False) -> None:
        """Dispatch ``events`` on ``fd`` to ``handler``.

        ``idle=True`` marks a socket that is rarely ready (a listener): while only such sockets
        are registered, :meth:`poll` makes its system call on one pass in
        :data:`IDLE_POLL_EVERY`, so that a job whose peers all use shared memory does not pay
        an ``epoll_wait`` on every progress pass.  Sleeping waits still wake on them at once.
        """
        if idle:
            self._idle_fds.add(fd)
        self.handlers[fd] = handler
        self._poller.register(fd, events)
        if not self._epoll:  # pragma: no cover - non-Linux
            self.engine.register_fd(fd)

    def modify(self, fd: int, events: int, handler: Handler | None = None) -> None:
        if handler is not None:
            self.handlers[fd] = handler
        self._poller.modify(fd, events)

    def remove(self, fd: int) -> None:
        if self.handlers.pop(fd, None) is None:
            return
        self._idle_fds.discard(fd)
        self._poller.unregister(fd)
        if not self._epoll:  # pragma: no cover - non-Linux
            self.engine.unregister_fd(fd)

    def sweep_by(self, when: float) -> None:
        """Have :attr:`sweeper` called at the first poll at or after ``when``."""
        if self.sweep_at is None or when < self.sweep_at:
            self.sweep_at = when

    def _sweep(self) -> int:
        now = time.monotonic()
        if self.sweep_at is None or now < self.sweep_at or self.sweeper is None:
            return 0
        self.sweep_at = None
        self._busy = True
        try:
            return self.sweeper(now)
        finally:
            self._busy = False

    def poll(self) -> int:
        """Handle every ready socket once; the number of events handled."""
        if self._busy:
            return 0
        swept = 0 if self.sweep_at is None else self._sweep()
        if len(self.handlers) == len(self._idle_fds):
            self._skipped += 1
            if self._skipped < IDLE_POLL_EVERY:
                return swept
            self._skipped = 0
        ready = self._poll(0)
        if not ready:
            return swept
        self._busy = True
        try:
            handlers = self.handlers
            events = swept
            for fd, mask in ready:
                handler = handlers.get(fd)
                if handler is not None:
                    events += handler(mask)
            return events
        finally:
            self._busy = False

    def close(self) -> None:
        for fd in list(self.handlers):
            self.remove(fd)
        if self._epoll:
            self.engine.unregister_fd(self._poller.fileno())
            self._poller.close()
