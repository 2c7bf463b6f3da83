"""Reading and writing the control words of the segment, and waiting on them.

**Lock-free (x86-64).**  A rank publishes a counter with one aligned 8-byte store through a
numpy ``uint64`` element (numpy writes an aligned native element with a single typed store) and
reads its peers' counters through a ``memoryview`` cast to ``Q`` (one 8-byte load each).  The
protocol needs exactly two orderings, both of which x86-64's total store order gives for free:
"write the slot, then store the counter" is seen by a reader as "counter first, data complete"
(stores are not reordered with stores, loads not with loads), and "read the slot, then store
DONE" never lets the writer's next fill overtake the read (stores are not reordered with older
loads).  :func:`lock_free_supported` admits only such processors.

**Locked (elsewhere, or ``coll_sm_lockfree = no``).**  Every store and every load of a counter
runs under a POSIX record lock on the segment file (an fd opened before the name was unlinked);
the kernel's lock gives the acquire and release barriers the data needs.

**Waiting** first polls the flag a few times (``poll`` checks, ``coll_sm_poll_count``; a peer
of a small collective is usually a microsecond or two away, and one check costs a tenth of a
pass of the progress engine), each check after a ``sched_yield`` when the node is
oversubscribed (``yield_when_idle``: the peer may need this very core), none when the flags
are locked (a check is a system call there).  Then it goes through the progress engine
(``engine.wait_until``), so point-to-point traffic keeps moving while a rank waits, an idle
rank yields the processor when the node is oversubscribed (``opal_progress_yield_when_idle``)
and, after its spin budget, sleeps until a
peer rings its doorbell (:mod:`.doorbell`): a long wait costs no processor time.
"""

from __future__ import annotations

import fcntl
import os
import platform
from collections.abc import Callable
from typing import Any

import numpy as np

from ompy.opal.membarrier import Fence

from .doorbell import Doorbell

#: Machines whose memory model is TSO (stores not reordered with stores, loads with loads).
TSO_MACHINES = frozenset({"x86_64", "amd64"})


def lock_free_supported(machine: str | None = None) -> bool:
    """Whether the lock-free flag protocol is sound on this processor (TSO only)."""
    return (machine or platform.machine()).lower() in TSO_MACHINES


class Flags:
    """The counters of one segment as one rank sees them: its own block and everyone's words.

    ``control`` is the segment's control region (all ranks' blocks of ``stride`` words),
    ``mine`` this rank's block as ``uint64`` elements.  ``sleeping`` is the word index of the
    SLEEPING flags; ``bells`` holds every rank's doorbell address (``doorbell`` is ours).
    """

    def __init__(
        self,
        control: memoryview,
        mine: np.ndarray,
        *,
        stride: int,
        rank: int,
        sleeping: int,
        engine: Any,
        doorbell: Doorbell,
        bells: list[str],
        fence: Fence,
        lock_fd: int | None = None,
        poll: int = 0,
    ) -> None:
        self.words = control.cast("Q")
        self.stride = stride
        self.rank = rank
        self.engine = engine
        self.doorbell = doorbell
        self.lock_fd = lock_fd
        self._mine = mine
        self._sleeping = sleeping
        self._bells = [(peer, bell) for peer, bell in enumerate(bells) if peer != rank]
        self._fence = fence
        self._columns = [self.words[word::stride] for word in range(stride)]
        self._pending: Callable[[], bool] | None = None
        self._asleep = False
        #: The checks of a flag before a wait enters the engine (none when locked).
        self._polls = range(poll if lock_fd is None else 0)
        if lock_fd is None:
            self.least: Callable[[int], int] = self._least
            self.load: Callable[[int, int], int] = self._load
            self.store: Callable[[int, int], None] = self._store
        else:
            self.least = self._least_locked
            self.load = self._load_locked
            self.store = self._store_locked
        engine.register_fd(doorbell.fd)
        engine.register_sleep_hook(self._before_sleep)

    # lock-free ------------------------------------------------------------------------------

    def _store(self, word: int, value: int) -> None:
        """Publish ``value`` in our ``word`` (one 8-byte store), then wake any sleeper."""
        self._mine[word] = value
        if any(self._columns[self._sleeping]):
            self._ring()

    def _least(self, word: int) -> int:
        """The smallest value of ``word`` over all ranks."""
        return min(self._columns[word])

    def _load(self, rank: int, word: int) -> int:
        return self.words[rank * self.stride + word]

    # locked ---------------------------------------------------------------------------------

    def _store_locked(self, word: int, value: int) -> None:
        fd = self.lock_fd
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)
        try:
            self._mine[word] = value
            sleepers = any(self._columns[self._sleeping])
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)
        if sleepers:
            self._ring()

    def _least_locked(self, word: int) -> int:
        fd = self.lock_fd
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)
        try:
            return min(self._columns[word])
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)

    def _load_locked(self, rank: int, word: int) -> int:
        fd = self.lock_fd
        fcntl.lockf(fd, fcntl.LOCK_EX, 1, 0)
        try:
            return self.words[rank * self.stride + word]
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, 0)

    def _set_sleeping(self, value: int) -> None:
        if self.lock_fd is None:
            self._mine[self._sleeping] = value
            return
        fcntl.lockf(self.lock_fd, fcntl.LOCK_EX, 1, 0)
        try:
            self._mine[self._sleeping] = value
        finally:
            fcntl.lockf(self.lock_fd, fcntl.LOCK_UN, 1, 0)

    # sleeping -------------------------------------------------------------------------------

    def _ring(self) -> None:
        words, stride, sleeping, ring = self.words, self.stride, self._sleeping, self.doorbell.ring
        for peer, bell in self._bells:
            if words[peer * stride + sleeping]:
                ring(bell)

    def _before_sleep(self) -> bool:
        """Engine sleep hook: say we sleep, then check once more; False if the wait is over.

        The doorbell is drained whatever the engine waits for: a peer may ring it after this
        rank's collective is over, and a ring left unread would make every later sleep of the
        engine return at once (a blocked receive would spin at full CPU).
        """
        self.doorbell.drain()
        pending = self._pending
        if pending is None:
            return True  # not waiting on this communicator: no objection
        if not self._asleep:
            self._asleep = True
            self._set_sleeping(1)
            if self.lock_fd is None:
                self._fence.heavy()
        return not pending()

    def _until(self, predicate: Callable[[], bool]) -> None:
        self._pending = predicate
        try:
            self.engine.wait_until(predicate)
        finally:
            # Under the engine's lock: with THREAD_MULTIPLE the thread that sleeps for the
            # process runs this communicator's sleep hook, and must not raise SLEEPING again
            # between these lines (it would stay raised).
            with self.engine.lock:
                self._pending = None
                if self._asleep:
                    self._asleep = False
                    self._set_sleeping(0)

    # waiting --------------------------------------------------------------------------------

    def _poll(self, reached: Callable[[], bool]) -> bool:
        """Check ``reached`` up to ``poll`` times before the engine; True once it holds.

        On an oversubscribed node every check follows a ``sched_yield``: the peer that must
        store the flag may be waiting for this very core, and a check costs a fraction of an
        engine pass, so the core changes hands as fast as the kernel allows.
        """
        polls = self._polls
        if not polls:
            return False
        if self.engine.yield_when_idle:
            pause = os.sched_yield
            for _ in polls:
                pause()
                if reached():
                    return True
            return False
        return any(reached() for _ in polls)

    def wait_all(self, word: int, step: int) -> None:
        """Return once every rank's ``word`` has reached ``step``, progressing meanwhile."""
        least = self.least
        if least(word) >= step:
            return

        def reached() -> bool:
            return least(word) >= step

        if not self._poll(reached):
            self._until(reached)

    def wait_one(self, rank: int, word: int, step: int) -> None:
        """Return once ``rank``'s ``word`` has reached ``step``, progressing meanwhile."""
        load = self.load
        if load(rank, word) >= step:
            return

        def reached() -> bool:
            return load(rank, word) >= step

        if not self._poll(reached):
            self._until(reached)

    def close(self) -> None:
        """Leave the engine, drop the views of the segment (so it can be unmapped), the fds."""
        self.engine.unregister_sleep_hook(self._before_sleep)
        self.engine.unregister_fd(self.doorbell.fd)
        self.doorbell.close()
        for column in self._columns:
            column.release()
        self._columns = []
        self.words.release()
        self._mine = None  # type: ignore[assignment]
        self.store = self.least = self.load = _closed  # type: ignore[assignment]
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None


def _closed(*_args: Any) -> Any:
    raise RuntimeError("the sm coll module of this communicator was disabled")
