"""The progress engine: the one loop that moves every transport forward.

MPI progresses only when a process calls into the library, so every blocking call ends up here:
:meth:`ProgressEngine.wait_until` calls :meth:`ProgressEngine.progress` (which calls each
registered callback once) until a condition holds.  Callbacks return how many events they
handled; a pass that handles nothing is *idle*.

Idle behaviour, in three steps:

1. **Spin**: the first ``opal_progress_spin_count`` idle passes poll again at once, because a
   reply is usually a few microseconds away.  With ``opal_progress_yield_when_idle`` each idle
   pass also calls ``os.sched_yield()``, so that on an oversubscribed node the rank that has
   something to do gets the core.
2. **Block**: after that, the engine sleeps in its event loop (:mod:`ompy.opal.eventloop`) on
   the file descriptors the transports registered (:meth:`ProgressEngine.register_fd`), so a
   receive that waits for seconds costs no CPU and wakes as soon as a socket becomes readable.
   Just before each sleep the engine asks its *sleep hooks*
   (:meth:`ProgressEngine.register_sleep_hook`) whether sleeping is safe: a shared-memory
   transport uses the hook to raise a "sleeping" flag that tells its peers to ring a doorbell
   fd, then re-checks its queues; a hook that answers False (work arrived meanwhile) makes the
   engine progress again instead of sleeping.
3. **Back off**: sources without a file descriptor (or a predicate set by another thread) are
   still seen, because the ``select()`` timeout starts at 50 µs and doubles up to
   ``opal_progress_block_max_ms``.  :meth:`ProgressEngine.wakeup` ends a sleep at once from any
   thread.

``opal_progress_yield_when_idle`` is a parameter like any other; unless a user set it, an engine
yields when the run-time says its node is oversubscribed (more ranks than cores: the identity's
``oversubscribed``, handed to :meth:`ProgressEngine.from_params` by the layer that knows it),
like Open MPI's ``mpi_yield_when_idle``.  The engine itself never reads the environment.

Threads: registering and unregistering callbacks and hooks are safe from any thread (the
tuples are replaced, never mutated).  The engine has two modes, chosen once:

* **single** (the default, for ``MPI_THREAD_SINGLE`` .. ``SERIALIZED``): passes and waits
  take no lock; one thread at a time is inside MPI.
* **threaded** (:meth:`ProgressEngine.enable_threads`, for ``MPI_THREAD_MULTIPLE``): every
  progress pass runs under :attr:`ProgressEngine.lock`, the process's one MPI lock, which the
  layers above take around their own entry points too (docs/architecture.md, "Threads").  A
  blocking wait holds the lock for one pass at a time and tests its condition without it, so
  the waits of several threads interleave and each thread's pass completes the others'
  requests.  Idle passes yield now and then when other threads wait too (``os.sched_yield``
  hands them the interpreter; every pass on an oversubscribed node).
  Once idle for long, one thread at a time sleeps on the transports' descriptors (it runs the
  sleep hooks); the others wait on a condition of the lock.  Whoever handles events while
  others wait wakes them (:meth:`ProgressEngine.notify`), and the descriptor sleeper, when it
  wakes, wakes the condition waiters, so a request completed by any thread is seen by its
  waiter at once.
  The switch happens while one thread uses the engine, possibly from inside one of its own
  passes or waits (a user function a pass runs starts a thread): :meth:`enable_threads` then
  holds the lock until that pass ends, and the wait goes on as a threaded wait.
"""

from __future__ import annotations

import dis
import os
import sys
import threading
import time
import types
from collections.abc import Callable
from typing import Any, TypeVar

from .eventloop import EventLoop
from .mca.params import ParamType, Registry, SourceKind

#: A progress callback: handles whatever is ready and says how many events that was.
ProgressCallback = Callable[[], int]
#: A sleep hook: called before an idle wait blocks; False means "do not sleep, work is pending".
SleepHook = Callable[[], bool]
_T = TypeVar("_T")

_FIRST_BLOCK_S = 50e-6
#: Idle passes after which a threaded wait counts itself in ``ProgressEngine.waiting``.
_COUNT_AFTER = 16


def register_params(registry: Registry) -> None:
    """Register the progress engine's layer-wide parameters (``opal_progress_*``)."""
    registry.register(
        "opal_progress_yield_when_idle",
        ParamType.BOOL,
        False,
        "Yield the processor (sched_yield) on every idle progress pass while spinning; when not "
        "set, true on a node that the run-time marks oversubscribed (more ranks than cores) "
        "and false elsewhere",
        level=4,
        scope=("opal", ""),
    )
    registry.register(
        "opal_progress_spin_count",
        ParamType.INT,
        1000,
        "Idle progress passes a blocking wait makes before it sleeps on the transports' file "
        "descriptors (0 sleeps at once; larger values trade CPU for latency)",
        level=5,
        minimum=0,
        scope=("opal", ""),
    )
    registry.register(
        "opal_progress_block_max_ms",
        ParamType.FLOAT,
        10.0,
        "Longest single sleep of an idle blocking wait, in milliseconds; bounds how late a "
        "source without a file descriptor is noticed",
        level=6,
        minimum=0.01,
        maximum=10_000,
        scope=("opal", ""),
    )


class ProgressEngine:
    """Registered progress callbacks, the file descriptors to sleep on, and the wait loop."""

    def __init__(
        self,
        *,
        yield_when_idle: bool = False,
        spin_count: int = 1000,
        block_max_ms: float = 10.0,
        thread_safe: bool = False,
    ) -> None:
        if spin_count < 0:
            raise ValueError(f"spin_count must be >= 0, got {spin_count}")
        if block_max_ms <= 0:
            raise ValueError(f"block_max_ms must be > 0, got {block_max_ms}")
        self.yield_when_idle = yield_when_idle
        self.spin_count = spin_count
        self.block_max = block_max_ms / 1000.0
        self._callbacks: tuple[ProgressCallback, ...] = ()
        self._sleep_hooks: tuple[SleepHook, ...] = ()
        self._lock = threading.Lock()  # registrations only (a leaf: nothing is taken under it)
        #: The MPI lock of the process in threaded mode: held for each progress pass and by
        #: the layers above around every entry point that touches matching or a transport.
        #: Reentrant, because an entry point may progress (a probe) or call another.
        self.lock = threading.RLock()
        self._idle = threading.Condition(self.lock)  # threads waiting for another's progress
        self._waiters = 0  # threads in ``_idle.wait`` (read and written under ``lock``)
        self._generation = 0  # counts notify() calls: "something may have completed"
        #: Threads in a threaded wait that has been idle for a while (changed under
        #: ``lock``): while it is 0 no thread can miss a completion, and :meth:`notify` need
        #: not be called.
        self.waiting = 0
        self._fd_sleeper = False  # a thread sleeps on the descriptors (under ``lock``)
        #: True once :meth:`enable_threads` switched to the ``MPI_THREAD_MULTIPLE`` variants.
        self.threaded = False
        #: The thread that switched from inside this engine's pass or wait and holds
        #: :attr:`lock` until that pass ends (:meth:`enable_threads`); None otherwise.
        self._holder: int | None = None
        self._loop = EventLoop()  # sleeping only: the callbacks read what became readable
        self._fds: dict[int, int] = {}  # fd -> registration count
        # Bound once: the unlocked pass is the fast path.
        self.progress = self._progress
        if thread_safe:
            self.enable_threads()

    @classmethod
    def from_params(
        cls, registry: Registry, *, oversubscribed: bool = False, thread_safe: bool = False
    ) -> ProgressEngine:
        """An engine configured from the ``opal_progress_*`` parameters.

        ``oversubscribed`` is the run-time's word on this node; it decides whether to yield
        when idle unless the user set ``opal_progress_yield_when_idle`` (from any source).
        """
        register_params(registry)
        yield_when_idle = registry.resolve("opal_progress_yield_when_idle")
        return cls(
            yield_when_idle=(
                oversubscribed
                if yield_when_idle.source.kind is SourceKind.DEFAULT
                else yield_when_idle.value
            ),
            spin_count=registry.get("opal_progress_spin_count"),
            block_max_ms=registry.get("opal_progress_block_max_ms"),
            thread_safe=thread_safe,
        )

    # -- callbacks --------------------------------------------------------------------------

    def register(self, callback: ProgressCallback) -> None:
        """Call ``callback`` on every progress pass; registering it twice is an error."""
        with self._lock:
            self._callbacks = _added(self._callbacks, callback, "progress callback")

    def unregister(self, callback: ProgressCallback) -> None:
        """Stop calling ``callback``; unknown callbacks are an error (a double unregister)."""
        with self._lock:
            self._callbacks = _removed(self._callbacks, callback, "progress callback")

    @property
    def callbacks(self) -> tuple[ProgressCallback, ...]:
        return self._callbacks

    def _progress(self) -> int:
        events = 0
        for callback in self._callbacks:
            events += callback()
        if self.threaded:  # switched during this pass (enable_threads): it ends here
            self._release_hold()
        return events

    # -- threads ----------------------------------------------------------------------------

    def enable_threads(self) -> None:
        """Switch to the threaded variants (``MPI_THREAD_MULTIPLE``); once, never back.

        Called while one thread uses the engine: at initialization, or when that thread is
        about to start a second one (``ompy.ompi.threads``), so the switch itself needs no
        lock.  That thread may be inside one of this engine's passes or waits when it
        switches (a user function it calls, an ``Op`` in a nonblocking collective's schedule
        or the unpickling of a received object, starts a thread): the rest of that pass runs
        unlocked code, so the thread takes :attr:`lock` now and keeps it until the pass (or
        the wait's condition) ends; the wait then goes on as a threaded wait.  A thread it
        started waits for the lock at its first MPI call until then.
        """
        if self.threaded:
            return
        if self._inside():
            self.lock.acquire()
            self._holder = threading.get_ident()
        self.threaded = True
        self.progress = self._progress_threaded

    def _inside(self) -> bool:
        """Whether the calling thread is inside one of this engine's unlocked passes.

        Read from the thread's stack (this runs once per engine): a frame of :meth:`_progress`,
        or of :meth:`_wait` stopped at the line of its inline pass.  A wait stopped elsewhere
        is testing its condition, which runs without the lock in a threaded wait too.
        """
        frame = sys._getframe(1)
        while frame is not None:
            code = frame.f_code
            if (
                code is _PASS_CODE or (code is _WAIT_CODE and frame.f_lineno in _WAIT_PASS_LINES)
            ) and frame.f_locals.get("self") is self:
                return True
            frame = frame.f_back
        return False

    def _release_hold(self) -> None:
        """End the hold :meth:`enable_threads` took, if the calling thread has one."""
        if self._holder == threading.get_ident():
            self._holder = None
            self.lock.release()

    def _progress_threaded(self) -> int:
        with self.lock:
            events = 0
            for callback in self._callbacks:
                events += callback()
            if events:
                self.notify()
            return events

    def notify(self) -> None:
        """Wake every thread that waits for progress (the caller holds :attr:`lock`).

        Called after work that may have completed another thread's request: a pass that
        handled events, a send that a transport delivered at once (to this very process).
        Callers outside the engine may skip it while :attr:`waiting` is 0.
        """
        self._generation += 1
        if self._waiters:
            self._idle.notify_all()
        if self._fd_sleeper:
            self._loop.wake()

    def register_sleep_hook(self, hook: SleepHook) -> None:
        """Call ``hook()`` before every idle sleep; if it returns False the wait progresses again.

        The hook is where a transport without a file descriptor of its own announces that this
        process is about to block (so that peers wake it through a registered fd) and then
        checks once more for work that arrived before the announcement was visible.
        """
        with self._lock:
            self._sleep_hooks = _added(self._sleep_hooks, hook, "sleep hook")

    def unregister_sleep_hook(self, hook: SleepHook) -> None:
        """Stop calling ``hook``; unknown hooks are an error (a double unregister)."""
        with self._lock:
            self._sleep_hooks = _removed(self._sleep_hooks, hook, "sleep hook")

    # -- file descriptors -------------------------------------------------------------------

    def register_fd(self, fd: int) -> None:
        """Wake an idle wait when ``fd`` becomes readable (registrations are counted)."""
        with self._lock:
            if fd in self._fds:
                self._fds[fd] += 1
                return
            self._loop.add_reader(fd, _readable)
            self._fds[fd] = 1

    def unregister_fd(self, fd: int) -> None:
        with self._lock:
            count = self._fds.get(fd)
            if count is None:
                raise ValueError(f"file descriptor {fd} is not registered with the progress engine")
            if count > 1:
                self._fds[fd] = count - 1
                return
            del self._fds[fd]
            self._loop.remove_reader(fd)

    def wakeup(self) -> None:
        """End the current idle sleep now (callable from any thread or a signal handler)."""
        self._loop.wake()

    # -- waiting ----------------------------------------------------------------------------

    def wait_until(self, predicate: Callable[[], bool], timeout: float | None = None) -> bool:
        """Progress until ``predicate()`` is true; False if ``timeout`` seconds pass first."""
        if predicate():
            return True
        return self._wait(predicate, None, timeout)

    def wait_for(self, request: Any, timeout: float | None = None) -> bool:
        """Progress until ``request.complete`` is true; False if ``timeout`` seconds pass first.

        :meth:`wait_until` for the commonest condition, read inline: a blocking receive
        checks its request once per pass without calling a predicate.
        """
        if request.complete:
            return True
        return self._wait(None, request, timeout)

    def _wait(
        self, predicate: Callable[[], bool] | None, request: Any, timeout: float | None
    ) -> bool:
        """The wait loop: one pass over the callbacks (inline), the condition, idle steps."""
        if self.threaded:
            return self._wait_threaded(predicate, request, timeout)
        progress = None if self.progress == self._progress else self.progress
        spin_count = self.spin_count
        yield_when_idle = self.yield_when_idle
        sched_yield = os.sched_yield
        deadline = None if timeout is None else time.monotonic() + timeout
        idle = 0
        block = _FIRST_BLOCK_S
        while True:
            if progress is None:
                events = 0
                for callback in self._callbacks:  # _progress(), inlined
                    events += callback()
            else:
                events = progress()
            if self.threaded:  # a thread was started in this pass: the pass ends here
                self._release_hold()
            if request.complete if predicate is None else predicate():
                return True
            if self.threaded:  # a thread was started (in the pass, or by the condition)
                self._release_hold()
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                return self._wait_threaded(predicate, request, left)
            if events:
                idle = 0
                block = _FIRST_BLOCK_S
                continue
            idle += 1
            if idle <= spin_count:
                if yield_when_idle:
                    sched_yield()
                if deadline is not None and not idle & 0x3F and time.monotonic() >= deadline:
                    return False
                continue
            sleep = block
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                sleep = min(sleep, left)
            if self._sleep_hooks and not self._may_sleep():
                continue  # a hook saw work arriving: progress again (the deadline still holds)
            self._sleep(sleep)
            block = min(block * 2, self.block_max)

    def _may_sleep(self) -> bool:
        may = True
        for hook in self._sleep_hooks:  # every hook runs: each raises its own flag
            if not hook():
                may = False
        return may

    def _sleep(self, seconds: float) -> None:
        self._loop.run_once(seconds)

    def _wait_threaded(
        self, predicate: Callable[[], bool] | None, request: Any, timeout: float | None
    ) -> bool:
        """:meth:`_wait` with ``MPI_THREAD_MULTIPLE``: the lock for one pass at a time.

        The condition is tested without the lock: it may run user code (a pickled receive
        unpickles there) or take a lock of its own (the rendezvous channel's), and the MPI
        lock is the innermost.  A completion by another thread between the test and this
        thread's sleep is not lost: completions notify under the lock, which counts them, and
        a thread about to sleep first checks under the lock that the count has not moved
        since its own pass.
        """
        counted = False
        try:
            lock = self.lock
            sched_yield = os.sched_yield
            spin_count = self.spin_count
            yield_when_idle = self.yield_when_idle
            deadline = None if timeout is None else time.monotonic() + timeout
            idle = 0
            block = _FIRST_BLOCK_S
            while True:
                with lock:
                    if idle >= _COUNT_AFTER and not counted:
                        # A wait joins ``waiting`` only once it has been idle for a while:
                        # short waits (a ping-pong's) take no lock beyond their passes.  A
                        # completion before this block is seen by the test after it; one
                        # after it is notified, since ``waiting`` is no longer 0.
                        self.waiting += 1
                        counted = True
                    events = 0
                    for callback in self._callbacks:
                        events += callback()
                    if events:
                        self.notify()
                    seen = self._generation
                if request.complete if predicate is None else predicate():
                    return True
                if events:
                    idle = 0
                    block = _FIRST_BLOCK_S
                    continue
                idle += 1
                if idle <= spin_count or not counted:
                    if yield_when_idle or (not idle & 0xF and self.waiting > 1):
                        # Every 16th idle pass (every pass when oversubscribed) lets another
                        # waiting thread have the interpreter: it may be the one whose
                        # request completed, and would otherwise wait for the interpreter's
                        # switch interval.  A thread that waits alone keeps its core.
                        sched_yield()
                    if deadline is not None and not idle & 0x3F and time.monotonic() >= deadline:
                        return False
                    continue
                sleep = block
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return False
                    sleep = min(sleep, left)
                if self._rest(seen, sleep):
                    block = min(block * 2, self.block_max)
        finally:
            if counted:
                with self.lock:
                    self.waiting -= 1

    def _rest(self, seen: int, seconds: float) -> bool:
        """An idle threaded wait's sleep; False if it did not sleep (progress again at once).

        ``seen`` is the notification count of this thread's last pass.  One thread at a time
        sleeps on the descriptors, after the sleep hooks; the others wait on the condition,
        which a notification or the descriptor sleeper's waking ends.
        """
        with self.lock:
            if self._generation != seen:
                return False  # something completed since this thread's pass: test again
            if self._fd_sleeper:  # another thread watches the descriptors: wait for it
                self._waiters += 1
                try:
                    self._idle.wait(seconds)
                finally:
                    self._waiters -= 1
                return True
            if self._sleep_hooks and not self._may_sleep():
                return False  # a hook saw work arriving: progress again
            self._fd_sleeper = True
        try:
            self._loop.run_once(seconds)
        finally:
            with self.lock:
                self._fd_sleeper = False
                if self._waiters:  # what woke this thread may be another's completion
                    self._idle.notify_all()
        return True

    def close(self) -> None:
        """Release the event loop (its wake-up pipe and selector); idempotent."""
        self._loop.close()


def _added(entries: tuple[_T, ...], entry: _T, what: str) -> tuple[_T, ...]:
    """``entries`` with ``entry`` at the end (a new tuple: passes iterate the old one safely).

    Registering an entry twice is an error, named after ``what`` it is.
    """
    if entry in entries:
        raise ValueError(f"{what} {entry!r} is already registered")
    return (*entries, entry)


def _removed(entries: tuple[_T, ...], entry: _T, what: str) -> tuple[_T, ...]:
    """``entries`` without ``entry`` (a new tuple); removing an unknown one is an error."""
    if entry not in entries:
        raise ValueError(f"{what} {entry!r} is not registered")
    return tuple(other for other in entries if other != entry)


def _pass_lines(code: types.CodeType, names: tuple[str, ...]) -> frozenset[int]:
    """The lines of ``code`` that read one of the local variables ``names``."""
    return frozenset(
        instruction.positions.lineno
        for instruction in dis.get_instructions(code)
        if instruction.opname == "LOAD_FAST"
        and instruction.argval in names
        and instruction.positions is not None
        and instruction.positions.lineno is not None
    )


_PASS_CODE = ProgressEngine._progress.__code__
_WAIT_CODE = ProgressEngine._wait.__code__
#: Where an unthreaded wait runs its pass: the callbacks it calls inline, or ``progress()``.
_WAIT_PASS_LINES = _pass_lines(_WAIT_CODE, ("callback", "progress"))


def _readable(_fd: int) -> None:
    """A registered descriptor woke the engine: the next pass's callbacks read it."""
