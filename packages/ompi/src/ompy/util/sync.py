"""Synchronisation between processes over one-sided communication: mpi4py's ``mpi4py.util.sync``.

Why one-sided communication: a counter, a lock or a condition must be usable by any process at
any time, without the help of the process that keeps its memory.  Atomic window operations
(``Fetch_and_op``, ``Compare_and_swap``, ``Accumulate`` with ``REPLACE``) inside passive-target
epochs give exactly that; a process that must wait for another spins on a cell of its *own*
window (no messages while it waits), pausing a little longer each round and giving the window's
progress engine a turn so that a target served by messages still applies what arrives.

The objects, all collective to create and to free over an intracommunicator:

- :class:`Sequential`: the ranks run a block one after another, in rank order (a token passed
  by empty messages);
- :class:`Counter`: a number kept by one rank that every rank fetches and advances atomically;
- :class:`Mutex`: a queue lock (Mellor-Crummey and Scott's): rank 0 keeps the rank of the last
  process that asked for the lock (the queue's *tail*); every process keeps a *flag* (how many
  times it holds the lock, 0 when it does not) and the rank of its *successor* in the queue.
  An acquirer swaps itself in as the tail; if nobody was there it holds the lock, else it tells
  its predecessor it is next and spins until the predecessor sets its flag.  A releaser swaps the
  tail back to nobody if it is still the tail; if not, a successor is on its way: it waits for
  the successor's rank to appear and hands the lock over by setting the successor's flag;
- :class:`Condition`: waiters form a ring through their successor cells, rank 0 keeping the
  ring's tail (whose successor is the ring's head); a waiter joins the ring, releases the mutex
  and spins on its own flag; a notifier (holding the mutex) unlinks up to ``n`` waiters from the
  head and sets their flags;
- :class:`Semaphore`: a :class:`Counter` guarded by a :class:`Condition`.
"""

from __future__ import annotations

import array
import operator
import time
from collections.abc import Callable, Sequence
from typing import Literal, Self, TypeVar, cast

from ompy import MPI
from ompy.ompi.datatype.predefined import BYTE
from ompy.ompi.errors import ERR_ROOT

__all__ = ["Condition", "Counter", "Mutex", "Semaphore", "Sequential"]

T = TypeVar("T")

#: The rank (of the communicator) keeping the tail of a mutex's or a condition's queue.
_QUEUE_KEEPER = 0
#: "No process": an empty queue's tail, a cell without successor.
_NOBODY = MPI.PROC_NULL
#: The cells of a mutex's and a condition's window, in C ``int``\ s.  ``_FLAG``: how many times
#: this process holds the mutex / whether a condition waiter was woken; ``_NEXT``: the successor
#: in the queue; ``_TAIL`` (on the keeper only): the queue's last process.
_FLAG, _NEXT, _TAIL = 0, 1, 2

#: The pauses of a spinning process: none at first, then doubling from ~1 µs up to ~1 ms, so a
#: short wait is answered at once and a long one costs little CPU.
_PAUSE_MIN = 1.0 / (1 << 20)
_PAUSE_MAX = 1.0 / (1 << 10)


# -- window cells --------------------------------------------------------------------------


def _window(comm: MPI.Intracomm, info: MPI.Info, typecode: str, cells: Sequence[int]) -> MPI.Win:
    """A window holding ``cells`` (of ``typecode``) on this process, once every process set its.

    The cells are written with an atomic ``REPLACE`` rather than stored directly so that they are
    consistent with the atomic operations other processes will make on them.
    """
    unit = MPI.Datatype.fromcode(typecode).Get_size()
    window = MPI.Win.Allocate(len(cells) * unit, unit, info, comm)
    if cells:
        me = comm.Get_rank()
        window.Lock(me, MPI.LOCK_SHARED)
        window.Accumulate(array.array(typecode, cells), me, op=MPI.REPLACE)
        window.Unlock(me)
    comm.Barrier()
    return window


def _fetch_and_op(window: MPI.Win, value: int, rank: int, cell: int, op: MPI.Op) -> int:
    """Apply ``op`` with ``value`` to an ``int`` cell of ``rank`` (in an epoch); its old value."""
    old = array.array("i", [0])
    window.Fetch_and_op(array.array("i", [value]), old, rank, cell, op)
    window.Flush(rank)
    return old[0]


def _swap(window: MPI.Win, value: int, rank: int, cell: int) -> int:
    """Write ``value`` to a cell of ``rank`` (in an epoch); the value it replaced."""
    return _fetch_and_op(window, value, rank, cell, MPI.REPLACE)


def _read(window: MPI.Win, rank: int, cell: int) -> int:
    """The value of a cell of ``rank`` (in an epoch), read atomically."""
    return _fetch_and_op(window, 0, rank, cell, MPI.NO_OP)


def _compare_and_swap(window: MPI.Win, new: int, expected: int, rank: int, cell: int) -> int:
    """Write ``new`` to a cell of ``rank`` if it holds ``expected`` (in an epoch); its old value."""
    old = array.array("i", [0])
    window.Compare_and_swap(array.array("i", [new]), array.array("i", [expected]), old, rank, cell)
    window.Flush(rank)
    return old[0]


def _write(window: MPI.Win, value: int, rank: int, cell: int) -> None:
    """Write ``value`` atomically to a cell of ``rank`` (complete when the epoch ends)."""
    window.Accumulate(array.array("i", [value]), rank, cell, MPI.REPLACE)


def _wait_for_change(window: MPI.Win, cell: int, sentinel: int, *, reset: bool = False) -> int:
    """Spin (in an epoch) until this process's own ``cell`` no longer holds ``sentinel``.

    Returns the new value; with ``reset`` the cell is set back to ``sentinel`` (the caller is its
    only writer until it asks again).
    """
    memory = window.tomemory().cast("i")
    me = window.group_rank
    pause = 0.0
    window.Sync()
    while memory[cell] == sentinel:
        time.sleep(pause)
        pause = min(_PAUSE_MAX, max(_PAUSE_MIN, 2 * pause))
        window.Flush(me)  # a turn for the progress engine: incoming operations are applied
        window.Sync()
    value = memory[cell]
    if reset:
        memory[cell] = sentinel
    return value


def _free(window: MPI.Win) -> None:
    """Free ``window`` unless it was freed already (freeing twice is harmless, as in mpi4py)."""
    if window:
        window.Free()


# -- Sequential ----------------------------------------------------------------------------


class Sequential:
    """Run a block on the ranks of ``comm`` one at a time, in rank order."""

    comm: MPI.Intracomm
    tag: int

    def __init__(self, comm: MPI.Intracomm, tag: int = 0) -> None:
        self.comm = comm
        self.tag = int(tag)

    def __enter__(self) -> Self:
        self.begin()
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()

    def begin(self) -> None:
        """Wait for the previous rank's turn to end (rank 0 goes at once)."""
        rank = self.comm.Get_rank()
        if self.comm.Get_size() > 1 and rank > 0:
            self.comm.Recv([bytearray(), 0, BYTE], rank - 1, self.tag)

    def end(self) -> None:
        """Let the next rank begin (the last rank has nobody to tell)."""
        rank, size = self.comm.Get_rank(), self.comm.Get_size()
        if size > 1 and rank < size - 1:
            self.comm.Send([bytearray(), 0, BYTE], rank + 1, self.tag)


# -- Counter -------------------------------------------------------------------------------


class Counter:
    """A counter kept by rank ``root`` of ``comm`` that every rank fetches and advances."""

    def __init__(
        self,
        start: int = 0,
        step: int = 1,
        *,
        typecode: str = "i",
        comm: MPI.Intracomm = MPI.COMM_SELF,
        info: MPI.Info = MPI.INFO_NULL,
        root: int = 0,
    ) -> None:
        size = comm.Get_size()
        root = operator.index(root)
        if not 0 <= root < size:
            raise MPI.Exception(
                ERR_ROOT, f"Counter: root {root} is not a rank of the communicator (size {size})"
            )
        self._typechar = MPI.Datatype.fromcode(typecode).typechar
        cells = [start] if comm.Get_rank() == root else []
        self._start = start
        self._step = step
        self._root = root
        self._comm: MPI.Comm = comm
        self._window = _window(comm, info, self._typechar, cells)

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> int:
        return self.next()

    def next(self, incr: int | None = None) -> int:
        """Add ``incr`` (the step if ``None``) to the counter; the value it had before."""
        window = self._window
        if not window:
            raise RuntimeError("counter already freed")
        amount = array.array(self._typechar, [self._step if incr is None else incr])
        old = array.array(self._typechar, [0])
        op = MPI.SUM if amount[0] != 0 else MPI.NO_OP
        window.Lock(self._root, MPI.LOCK_SHARED)
        window.Fetch_and_op(amount, old, self._root, 0, op)
        window.Unlock(self._root)
        return old[0]

    def free(self) -> None:
        """Free the counter's window (collective)."""
        window, self._window = self._window, MPI.WIN_NULL
        self._comm = MPI.COMM_NULL
        _free(window)


# -- Mutex ---------------------------------------------------------------------------------


class Mutex:
    """A lock held by at most one process of ``comm`` at a time (granted in request order)."""

    def __init__(
        self,
        *,
        recursive: bool = False,
        comm: MPI.Intracomm = MPI.COMM_SELF,
        info: MPI.Info = MPI.INFO_NULL,
    ) -> None:
        cells = [0, _NOBODY, _NOBODY] if comm.Get_rank() == _QUEUE_KEEPER else [0, _NOBODY]
        self._recursive = bool(recursive)
        self._comm: MPI.Comm = comm
        self._window = _window(comm, info, "i", cells)

    def _live(self) -> MPI.Win:
        if not self._window:
            raise RuntimeError("mutex already freed")
        return self._window

    def _acquire(self, blocking: bool = True) -> bool:
        """Join the queue (or, not blocking, take the lock only if the queue is empty)."""
        window = self._window
        me = window.group_rank
        window.Lock_all()
        try:
            _write(window, _NOBODY, me, _NEXT)
            window.Flush(me)  # no stale successor once a successor can find us
            if blocking:
                before = _swap(window, me, _QUEUE_KEEPER, _TAIL)
            else:
                before = _compare_and_swap(window, me, _NOBODY, _QUEUE_KEEPER, _TAIL)
            held = before == _NOBODY
            if blocking and not held:
                _write(window, me, before, _NEXT)  # tell the predecessor we are next
                held = _wait_for_change(window, _FLAG, 0) != 0
            _write(window, int(held), me, _FLAG)
        finally:
            window.Unlock_all()
        return held

    def _release(self) -> None:
        """Leave the queue, handing the lock to the successor if there is one."""
        window = self._window
        me = window.group_rank
        window.Lock_all()
        try:
            tail = _compare_and_swap(window, _NOBODY, me, _QUEUE_KEEPER, _TAIL)
            if tail != me:
                successor = _wait_for_change(window, _NEXT, _NOBODY)
                _write(window, 1, successor, _FLAG)
            _write(window, 0, me, _FLAG)
        finally:
            window.Unlock_all()

    def _count_op(self, value: int, op: MPI.Op) -> int:
        """Apply ``op`` to this process's hold count; the count before."""
        window = self._window
        me = window.group_rank
        window.Lock(me, MPI.LOCK_SHARED)
        try:
            return _fetch_and_op(window, value, me, _FLAG, op)
        finally:
            window.Unlock(me)

    def _release_save(self) -> int | None:
        """Release entirely, returning what :meth:`_acquire_restore` needs (a condition's wait)."""
        state = self._count_op(0, MPI.NO_OP) if self._recursive else None
        self._release()
        return state

    def _acquire_restore(self, state: int | None) -> None:
        self._acquire()
        if self._recursive and state is not None:
            self._count_op(state, MPI.REPLACE)

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock (waiting for it if ``blocking``); whether this process holds it."""
        self._live()
        if self.locked():
            if not self._recursive:
                raise RuntimeError("cannot acquire already held mutex")
            self._count_op(1, MPI.SUM)
            return True
        return self._acquire(blocking)

    def release(self) -> None:
        """Give the lock up (a recursive mutex: once per acquisition)."""
        self._live()
        if not self.locked():
            raise RuntimeError("cannot release unheld mutex")
        if self._recursive and self._count_op(-1, MPI.SUM) > 1:
            return
        self._release()

    def locked(self) -> bool:
        """Whether this process holds the lock."""
        return self._live().tomemory().cast("i")[_FLAG] != 0

    def count(self) -> int:
        """How many times this process holds the lock (0 if it does not)."""
        self._live()
        return self._count_op(0, MPI.NO_OP)

    def free(self) -> None:
        """Free the mutex (collective), releasing it first if this process holds it."""
        if self._window and self.locked():
            self._release()
        window, self._window = self._window, MPI.WIN_NULL
        self._comm = MPI.COMM_NULL
        _free(window)


# -- Condition -----------------------------------------------------------------------------


class Condition:
    """A condition variable: processes wait, holding ``mutex``, until another notifies them."""

    def __init__(
        self,
        mutex: Mutex | None = None,
        *,
        recursive: bool = True,
        comm: MPI.Intracomm = MPI.COMM_SELF,
        info: MPI.Info = MPI.INFO_NULL,
    ) -> None:
        self._mutex_free: Callable[[], None]
        if mutex is None:
            self._mutex = Mutex(recursive=recursive, comm=comm, info=info)
            self._mutex_free = self._mutex.free
        elif isinstance(mutex, Mutex):
            self._mutex = mutex
            self._mutex_free = _keep
            mutex._live()  # a freed mutex has no communicator left
            comm = cast(MPI.Intracomm, mutex._comm)
        else:
            raise TypeError(f"Condition: mutex must be a Mutex or None, not {type(mutex).__name__}")
        cells = [0, _NOBODY, _NOBODY] if comm.Get_rank() == _QUEUE_KEEPER else [0, _NOBODY]
        self._comm: MPI.Comm = comm
        self._window = _window(comm, info, "i", cells)

    def _live(self) -> MPI.Win:
        if not self._window:
            raise RuntimeError("condition already freed")
        return self._window

    def _join(self) -> None:
        """Append this process to the ring of waiters (the mutex is held, so nobody unlinks)."""
        window = self._window
        me = window.group_rank
        window.Lock_all()
        try:
            tail = _swap(window, me, _QUEUE_KEEPER, _TAIL)
            head = me if tail == _NOBODY else _swap(window, me, tail, _NEXT)
            _write(window, head, me, _NEXT)
        finally:
            window.Unlock_all()

    def _unlink(self, most: int) -> list[int]:
        """Take up to ``most`` waiters from the ring's head; their ranks, in waiting order."""
        window = self._window
        most = max(0, min(most, window.group_size))
        taken: list[int] = []
        window.Lock_all()
        try:
            tail = _read(window, _QUEUE_KEEPER, _TAIL)
            if tail != _NOBODY:
                after = _read(window, tail, _NEXT)  # the head
                emptied = False
                while len(taken) < most and not emptied:
                    taken.append(after)
                    after = _read(window, after, _NEXT)
                    emptied = after == taken[0]
                if emptied:
                    _write(window, _NOBODY, _QUEUE_KEEPER, _TAIL)
                else:
                    _write(window, after, tail, _NEXT)
        finally:
            window.Unlock_all()
        return taken

    def _sleep(self) -> None:
        window = self._window
        window.Lock_all()
        try:
            _wait_for_change(window, _FLAG, 0, reset=True)
        finally:
            window.Unlock_all()

    def _wake(self, ranks: Sequence[int]) -> None:
        window = self._window
        window.Lock_all()
        try:
            for rank in ranks:
                _write(window, 1, rank, _FLAG)
        finally:
            window.Unlock_all()

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self, blocking: bool = True) -> bool:
        """Acquire the underlying mutex."""
        self._live()
        return self._mutex.acquire(blocking)

    def release(self) -> None:
        """Release the underlying mutex."""
        self._live()
        self._mutex.release()

    def locked(self) -> bool:
        """Whether this process holds the underlying mutex."""
        return self._mutex.locked()

    def wait(self) -> Literal[True]:
        """Release the mutex, wait to be notified, and take the mutex again."""
        self._live()
        if not self.locked():
            raise RuntimeError("cannot wait on unheld mutex")
        self._join()
        state = self._mutex._release_save()
        self._sleep()
        self._mutex._acquire_restore(state)
        return True

    def wait_for(self, predicate: Callable[[], T]) -> T:
        """Wait until ``predicate()`` is true; its last result."""
        result = predicate()
        while not result:
            self.wait()
            result = predicate()
        return result

    def notify(self, n: int = 1) -> int:
        """Wake up at most ``n`` waiting processes; how many were woken."""
        self._live()
        if not self.locked():
            raise RuntimeError("cannot notify on unheld mutex")
        woken = self._unlink(n)
        self._wake(woken)
        return len(woken)

    def notify_all(self) -> int:
        """Wake up every waiting process; how many were woken."""
        return self.notify((1 << 31) - 1)

    def free(self) -> None:
        """Free the condition (collective), and its mutex if the condition made it."""
        mutex = self._mutex
        if mutex._window and mutex.locked():
            mutex._release()
        self._mutex_free()
        window, self._window = self._window, MPI.WIN_NULL
        self._comm = MPI.COMM_NULL
        _free(window)


def _keep() -> None:
    """What freeing a condition does to a mutex it was given: nothing (the caller owns it)."""


# -- Semaphore -----------------------------------------------------------------------------


class Semaphore:
    """A counter of free slots: ``acquire`` takes one (waiting for it), ``release`` returns them."""

    def __init__(
        self,
        value: int = 1,
        *,
        bounded: bool = True,
        comm: MPI.Intracomm = MPI.COMM_SELF,
        info: MPI.Info = MPI.INFO_NULL,
    ) -> None:
        if value < 0:
            raise ValueError("initial value must be non-negative")
        self._bounded = bool(bounded)
        self._counter = Counter(value, comm=comm, info=info)
        self._condvar = Condition(recursive=False, comm=comm, info=info)
        self._comm: MPI.Comm = comm

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self, blocking: bool = True) -> bool:
        """Take a slot, waiting for one if ``blocking``; whether a slot was taken."""
        with self._condvar:
            while self._counter.next(0) == 0:
                if not blocking:
                    return False
                self._condvar.wait()
            self._counter.next(-1)
            return True

    def release(self, n: int = 1) -> None:
        """Return ``n`` slots, waking up to ``n`` waiters."""
        if n < 1:
            raise ValueError("increment must be one or more")
        with self._condvar:
            if self._bounded and self._counter.next(0) + n > self._counter._start:
                raise ValueError("semaphore released too many times")
            self._counter.next(n)
            self._condvar.notify(n)

    def free(self) -> None:
        """Free the semaphore (collective)."""
        self._counter.free()
        self._condvar.free()
        self._comm = MPI.COMM_NULL
