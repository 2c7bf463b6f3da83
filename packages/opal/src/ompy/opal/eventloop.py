"""The event loop helper: one selector, a thread-safe wake-up and timers, for every loop ompy runs.

Four places wait for several things at once: the progress engine sleeps on the transports'
file descriptors, the launcher watches its ranks' output pipes, exits and its own signals, the
control server serves every rank's socket from one thread, and the fork server waits for spawn
requests and its children's exits.  They all use this loop:

* :meth:`EventLoop.add_reader` / :meth:`EventLoop.add_writer` register ``callback(fd)`` for a
  file descriptor (or an object with ``fileno()``) becoming readable / writable;
* :meth:`EventLoop.run_once` waits until something is ready, a timer is due or ``timeout``
  seconds pass, then runs the callbacks of what is ready, the posted callbacks and the due
  timers, and returns how many ran; the caller decides when to stop;
* :meth:`EventLoop.wake` ends a wait from **any thread or a signal handler** (a self-pipe: a
  byte written to a non-blocking pipe that the loop watches and drains), and
  :meth:`EventLoop.post` hands a callback to the loop's thread;
* :meth:`EventLoop.call_at` / :meth:`EventLoop.call_later` run a callback at a moment of
  :func:`time.monotonic`; the returned :class:`Timer` can be cancelled;
* :meth:`EventLoop.catch_signals` makes every signal's arrival wake the loop
  (:func:`signal.set_wakeup_fd`), so signal handlers only need to record what happened.

The pipe is a pipe rather than an eventfd because :func:`signal.set_wakeup_fd` writes single
bytes, which an eventfd refuses.

Threads: :meth:`~EventLoop.wake` and :meth:`~EventLoop.post` may be called from anywhere; the
rest (registration, timers, :meth:`~EventLoop.run_once`, :meth:`~EventLoop.close`) belongs to
the thread that runs the loop.
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import itertools
import os
import selectors
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

#: Called with the file descriptor that became ready.
FdCallback = Callable[[int], None]
#: Called with no argument: posted callbacks and timers.
Callback = Callable[[], None]


class Timer:
    """A callback due at ``when`` (a :func:`time.monotonic` moment), until cancelled."""

    __slots__ = ("callback", "when")

    def __init__(self, when: float, callback: Callback) -> None:
        self.when = when
        self.callback: Callback | None = callback

    @property
    def cancelled(self) -> bool:
        return self.callback is None

    def cancel(self) -> None:
        """Do not run it (a timer that already ran or was cancelled stays so)."""
        self.callback = None


class EventLoop:
    """A selector with a self-pipe wake-up and timers (see the module documentation)."""

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        # os.pipe() descriptors are close-on-exec: a rank the launcher executes never sees them.
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, (None, None))
        self._posted: collections.deque[Callback] = collections.deque()
        self._timers: list[tuple[float, int, Timer]] = []
        self._order = itertools.count()
        self._previous_wakeup_fd: int | None = None
        self._closed = False
        self._wake_lock = threading.RLock()

    # -- file descriptors ---------------------------------------------------------------------

    def add_reader(self, fileobj: Any, callback: FdCallback) -> None:
        """Call ``callback(fd)`` whenever ``fileobj`` is readable (replaces an earlier reader)."""
        self._add(fileobj, selectors.EVENT_READ, callback)

    def add_writer(self, fileobj: Any, callback: FdCallback) -> None:
        """Call ``callback(fd)`` whenever ``fileobj`` is writable (replaces an earlier writer)."""
        self._add(fileobj, selectors.EVENT_WRITE, callback)

    def remove_reader(self, fileobj: Any) -> bool:
        """Stop watching ``fileobj`` for reading; False if it was not watched (or is closed)."""
        return self._remove(fileobj, selectors.EVENT_READ)

    def remove_writer(self, fileobj: Any) -> bool:
        """Stop watching ``fileobj`` for writing; False if it was not watched (or is closed)."""
        return self._remove(fileobj, selectors.EVENT_WRITE)

    def _add(self, fileobj: Any, event: int, callback: FdCallback) -> None:
        try:
            key = self._selector.get_key(fileobj)
        except KeyError:
            callbacks = (callback, None) if event == selectors.EVENT_READ else (None, callback)
            self._selector.register(fileobj, event, callbacks)
            return
        reader, writer = key.data
        if event == selectors.EVENT_READ:
            reader = callback
        else:
            writer = callback
        self._selector.modify(fileobj, key.events | event, (reader, writer))

    def _remove(self, fileobj: Any, event: int) -> bool:
        try:
            key = self._selector.get_key(fileobj)
        except (KeyError, ValueError):  # never registered, or closed already
            return False
        if not key.events & event or key.fd == self._wake_r:
            return False
        reader, writer = key.data
        if event == selectors.EVENT_READ:
            reader = None
        else:
            writer = None
        events = key.events & ~event
        if events:
            self._selector.modify(fileobj, events, (reader, writer))
        else:
            self._selector.unregister(fileobj)
        return True

    # -- wake-ups, posted callbacks, signals ----------------------------------------------------

    def wake(self) -> None:
        """End the current or the next wait of :meth:`run_once`; safe from any thread or a
        signal handler."""
        # Under the lock: closing the pipe in another thread between a check and the write
        # would make this write to a closed descriptor, or to whatever reused its number.  An
        # RLock, so that a Python signal handler waking the loop while the same thread is in
        # here does not deadlock.
        with self._wake_lock:
            if self._closed:
                return
            # A full pipe means wake-ups are pending already: the loop wakes anyway.
            with contextlib.suppress(BlockingIOError):
                os.write(self._wake_w, b"\0")

    def post(self, callback: Callback) -> None:
        """Run ``callback()`` in the loop's thread at its next pass; safe from any thread."""
        self._posted.append(callback)
        self.wake()

    def catch_signals(self) -> None:
        """Wake the loop whenever a signal arrives (main thread only; undone by :meth:`close`)."""
        previous = signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        if self._previous_wakeup_fd is None:
            self._previous_wakeup_fd = previous

    # -- timers -------------------------------------------------------------------------------

    def call_at(self, when: float, callback: Callback) -> Timer:
        """Run ``callback()`` once :func:`time.monotonic` reaches ``when``."""
        timer = Timer(when, callback)
        heapq.heappush(self._timers, (when, next(self._order), timer))
        return timer

    def call_later(self, delay: float, callback: Callback) -> Timer:
        """Run ``callback()`` in ``delay`` seconds."""
        return self.call_at(time.monotonic() + delay, callback)

    # -- running ------------------------------------------------------------------------------

    def run_once(self, timeout: float | None = None) -> int:
        """Wait up to ``timeout`` seconds (``None``: until something happens), run what is ready.

        Returns how many callbacks ran (ready descriptors, posted callbacks, due timers); a
        wake-up alone runs nothing and returns 0.
        """
        timers = self._timers
        if self._posted:
            timeout = 0.0
        elif timers:
            while timers and timers[0][2].cancelled:
                heapq.heappop(timers)
            if timers:
                due = max(0.0, timers[0][0] - time.monotonic())
                timeout = due if timeout is None else min(timeout, due)
        ran = 0
        ready = self._selector.select(timeout)
        current = self._selector.get_map()
        for key, mask in ready:
            fd = key.fd
            if fd == self._wake_r:
                self._drain()
                continue
            if mask & selectors.EVENT_WRITE:
                live = current.get(fd)  # an earlier callback may have removed it
                if live is not None and live.data[1] is not None:
                    live.data[1](fd)
                    ran += 1
            if mask & selectors.EVENT_READ:
                live = current.get(fd)
                if live is not None and live.data[0] is not None:
                    live.data[0](fd)
                    ran += 1
        while self._posted:
            self._posted.popleft()()
            ran += 1
        if timers:
            now = time.monotonic()
            while timers and timers[0][0] <= now:
                timer = heapq.heappop(timers)[2]
                callback = timer.callback
                if callback is not None:
                    timer.callback = None
                    callback()
                    ran += 1
        return ran

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 4096):
                pass

    def close(self) -> None:
        """Release the selector and the pipe and give signals back (idempotent)."""
        with self._wake_lock:
            if self._closed:
                return
            self._closed = True
        if self._previous_wakeup_fd is not None:
            signal.set_wakeup_fd(self._previous_wakeup_fd)
            self._previous_wakeup_fd = None
        self._selector.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        self._timers.clear()
        self._posted.clear()
