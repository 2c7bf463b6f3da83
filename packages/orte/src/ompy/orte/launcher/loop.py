"""The launcher's single event loop: rank output, rank exits, control events and signals.

Everything the launcher waits for is a readable file descriptor: the output pipes of the ranks
(registered by the iof module), one pidfd per rank (readable when it exits), and a wake-up pipe
that both the control server thread and the signal machinery (``signal.set_wakeup_fd``) write
to.  One ``selectors`` loop in the main thread therefore serves any number of ranks without a
thread per stream, and signal handlers only set flags that the loop acts on.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
from collections.abc import Callable

Callback = Callable[[int], None]


class EventLoop:
    """A minimal readiness loop: register ``fd -> callback``, then call :meth:`run_once`."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._drain_wakeups)
        self._previous_wakeup_fd: int | None = None

    def add_reader(self, fd: int, callback: Callback) -> None:
        self._selector.register(fd, selectors.EVENT_READ, callback)

    def remove_reader(self, fd: int) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(fd)

    def wake(self) -> None:
        """Make a blocked :meth:`run_once` return; safe to call from any thread."""
        # A full pipe means wake-ups are pending already: the loop will wake anyway.
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_w, b"\0")

    def catch_signals(self) -> None:
        """Route signal wake-ups into this loop (main thread only)."""
        self._previous_wakeup_fd = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)

    def run_once(self, timeout: float | None) -> None:
        """Wait up to ``timeout`` seconds for readiness and run the callbacks of ready fds."""
        for key, _events in self._selector.select(timeout):
            key.data(key.fd)

    def close(self) -> None:
        if self._previous_wakeup_fd is not None:
            signal.set_wakeup_fd(self._previous_wakeup_fd)
            self._previous_wakeup_fd = None
        self._selector.close()
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _drain_wakeups(self, fd: int) -> None:
        try:
            while os.read(fd, 4096):
                pass
        except BlockingIOError:
            pass
