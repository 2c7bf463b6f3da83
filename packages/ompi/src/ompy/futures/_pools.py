"""The executor's side: a queue of submitted calls and a manager thread that runs them.

A :class:`Pool` holds the queue (``(future, (fn, args, kwargs))`` items, ``None`` once the
executor shuts down) and one manager thread, started with one of the managers below:

- :func:`thread_manager`: the calls run on threads of this process (``ThreadPoolExecutor``,
  and an executor on a communicator of one process, which has no worker to use);
- :class:`CommManager`: the calls go to the worker processes at the other side of an
  intercommunicator (spawned ones, the other ranks under ``MPICommExecutor``, or the shared
  workers of ``python -m ompy.futures``), one call per idle worker at a time.

Why a thread: the program keeps running while the calls do; the manager alone talks to the
workers, waking on a new call and polling for replies (with a growing pause up to
``OMPY_FUTURES_BACKOFF`` seconds while replies are awaited).
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import BrokenExecutor, Future
from typing import Any

import attrs

from ompy import MPI

from . import _wire
from ._state import state, workers_comm

Task = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]
Item = tuple["Future[Any]", Task] | None

#: How many calls each worker is given at a time.  Two rather than one: the next call already
#: waits at the worker when it answers the current one, so small calls are not paced by the
#: round trip; more would let a worker hold calls that another, idle worker could run.
PREFETCH = 2

#: The longest pause of a manager waiting for replies (seconds); ``OMPY_FUTURES_BACKOFF``.
BACKOFF = 0.001

#: Batches: the most calls one message to a worker carries, and the longest a call may take
#: (seconds, from sending to its reply, per call of its message) for the next ones to be
#: batched.  Why: each message costs the executor and the worker a send, a receive and a
#: wake-up, tens of microseconds in Python, which dominate calls that do little (a map of
#: empty tasks ran at a third of mpi4py.futures' rate one call per message).  Batching only
#: while calls are short keeps long calls one per message, each cancellable until sent and
#: its result back as soon as it is done; a batch never takes more than an even share of the
#: queue over the free slots, so the other workers still get calls.
MAX_BATCH = 16
SHORT_CALL = 0.001


def env_flag(name: str) -> bool:
    """A yes/no environment variable (unset: no).

    A value that is neither warns (``RuntimeWarning`` naming the variable and the value) and
    counts as no, as mpi4py.futures does with ``MPI4PY_FUTURES_USE_PKL5``: a mistyped setting
    in the environment should not stop the program.
    """
    value = os.environ.get(name, "").strip().lower()
    if value in ("", "0", "false", "no", "off", "n"):
        return False
    if value in ("1", "true", "yes", "on", "y"):
        return True
    warnings.warn(
        f"environment variable {name}: unexpected value {os.environ[name]!r} (expected a "
        "yes/no value such as 1, 0, true, false); taken as false",
        RuntimeWarning,
        stacklevel=2,
    )
    return False


def transport(comm: Any, options: dict[str, Any]) -> Any:
    """The communicator the calls and replies of an executor travel on (pkl5 if asked)."""
    if options.get("use_pkl5"):
        from ompy.util import pkl5

        return pkl5.Intercomm(comm)
    return comm


def backoff_limit(options: dict[str, Any]) -> float:
    value: Any = options.get("backoff")
    if value is None:
        value = os.environ.get("OMPY_FUTURES_BACKOFF", BACKOFF)
    return max(float(value), 0.0)


class Pool:
    """The queue of an executor and the thread that empties it."""

    def __init__(self, manager: Callable[[Pool], None]) -> None:
        self.queue: collections.deque[Item] = collections.deque()
        self.wakeup = threading.Condition()
        #: Set once the manager knows how many workers there are (or the pool broke); named as
        #: mpi4py.futures names it.
        self.event = threading.Event()
        self.size = 0
        self.broken: str | None = None
        #: The manager has left: nothing queued now would ever run.
        self.finished = False
        self.thread = threading.Thread(target=self._run, args=(manager,), name="ompy-futures")
        self.thread.start()
        _track(self)

    def _run(self, manager: Callable[[Pool], None]) -> None:
        try:
            manager(self)
        except BaseException as error:
            self.break_down(f"{type(error).__name__}: {error}")
            raise
        finally:
            self.event.set()
            self._close_queue()
            _untrack(self)

    def _close_queue(self) -> None:
        """Once the manager has left: empty the queue and cancel what is still in it.

        Why: a call queued after the manager left (at interpreter exit, or once the executor
        was collected) would otherwise wait forever; the queue ends empty, as mpi4py's does.
        """
        with self.wakeup:
            self.finished = True
            left = [item for item in self.queue if item is not None]
            self.queue.clear()
        for future, _ in left:
            if self.broken is None:
                _cancel(future)
            elif future.set_running_or_notify_cancel():
                future.set_exception(BrokenExecutor(self.broken))

    # -- the executor's side -------------------------------------------------------------

    def push(self, item: Item) -> None:
        with self.wakeup:
            broken = self.broken
            if broken is None and not self.finished:
                self.queue.append(item)
                self.wakeup.notify()
                return
        if item is None:
            return
        if broken is None:
            _cancel(item[0])  # the manager has left: nobody would run it
        elif item[0].set_running_or_notify_cancel():
            item[0].set_exception(BrokenExecutor(broken))  # the pool broke since the check

    def done(self) -> None:
        """No more calls: the manager finishes those queued and running, then leaves."""
        self.push(None)

    def cancel(self, fail: str | None = None) -> None:
        """Cancel the calls still queued (or fail them with ``BrokenExecutor(fail)``)."""
        with self.wakeup:
            items = [item for item in self.queue if item is not None]
            ended = len(items) != len(self.queue)
            self.queue.clear()
            if ended:
                self.queue.append(None)
        for future, _ in items:
            if fail is None:
                _cancel(future)
            elif future.set_running_or_notify_cancel():
                future.set_exception(BrokenExecutor(fail))

    def join(self) -> None:
        if self.thread is not threading.current_thread():
            self.thread.join()

    # -- the manager's side --------------------------------------------------------------

    def started(self, size: int) -> None:
        self.size = size
        self.event.set()

    def break_down(self, reason: str) -> None:
        """The pool cannot run calls: fail those queued, refuse new ones."""
        with self.wakeup:
            self.broken = reason
        self.event.set()
        self.cancel(fail=reason)

    def take(self) -> Item | bool:
        """The next queued item, or False if there is none now."""
        with self.wakeup:
            if not self.queue:
                return False
            item = self.queue.popleft()
            if item is None:
                self.queue.appendleft(None)  # stays: every later take sees the end too
                self.wakeup.notify_all()  # and whoever sleeps on the queue wakes to see it
            return item

    def queued(self) -> int:
        """How many items wait in the queue now (an estimate: others may add or take)."""
        return len(self.queue)

    def sleep(self, seconds: float | None) -> None:
        """Wait until something is queued, at most ``seconds`` (None: no limit)."""
        with self.wakeup:
            if not self.queue:
                self.wakeup.wait(seconds)


def _cancel(future: Future[Any]) -> None:
    """Cancel a call not sent yet, and tell those waiting on it (``concurrent.futures.wait``
    and ``as_completed`` see a future as done only once it is notified)."""
    if future.cancel():
        future.set_running_or_notify_cancel()


# -- every pool of the process is told to finish when the interpreter exits ---------------------


def _track(pool: Pool) -> None:
    futures_state = state()
    with futures_state.lock:
        if not futures_state.exit_hook:
            futures_state.exit_hook = True
            # concurrent.futures ends its own pools the same way: a hook that runs when the main
            # thread finishes, before the interpreter waits for (non-daemon) manager threads.
            threading._register_atexit(_finish_all)  # type: ignore[attr-defined]
        futures_state.pools.add(pool)


def _untrack(pool: Pool) -> None:
    futures_state = state()
    with futures_state.lock:
        futures_state.pools.discard(pool)


def _finish_all() -> None:
    """At interpreter exit: end every pool's queue and wait for its manager."""
    futures_state = state()
    with futures_state.lock:
        pools = list(futures_state.pools)
    for pool in pools:
        pool.done()
    for pool in pools:
        pool.join()


# -- running calls on threads -------------------------------------------------------------------


def _run_call(future: Future[Any], task: Task) -> None:
    fn, args, kwargs = task
    try:
        result = fn(*args, **kwargs)
    except BaseException as error:
        future.set_exception(error)
    else:
        future.set_result(result)


def run_initializer(options: dict[str, Any]) -> bool:
    initializer = options.get("initializer")
    if initializer is None:
        return True
    try:
        initializer(*options.get("initargs", ()), **options.get("initkwargs", {}))
    except BaseException:
        return False
    return True


def thread_manager(size: int, options: dict[str, Any]) -> Callable[[Pool], None]:
    """Run the calls on ``size`` threads of this process (each runs the initializer first)."""

    def manage(pool: Pool) -> None:
        pool.started(size)
        failed = threading.Event()
        comm_self = MPI.COMM_SELF

        def work() -> None:
            with workers_comm(comm_self):
                if not run_initializer(options):
                    failed.set()
                    pool.break_down("initializer failed")
                    return
                while not failed.is_set():
                    item = pool.take()
                    if item is False:
                        pool.sleep(None)
                        continue
                    if item is None:
                        return
                    assert not isinstance(item, bool)
                    future, task = item
                    if future.set_running_or_notify_cancel():
                        _run_call(future, task)
                    del future, task, item

        threads = [threading.Thread(target=work, name="ompy-futures-worker") for _ in range(size)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    return manage


# -- running calls on worker processes ----------------------------------------------------------


def main_module_options() -> dict[str, Any]:
    """Where a worker finds the program's main module (see ``_worker._import_main``)."""
    _wire.alias_main()
    main = sys.modules.get("__main__")
    options: dict[str, Any] = {}
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name not in ("__main__", None):
        options["main_name"] = spec.name
    elif path := getattr(main, "__file__", None):
        options["main_path"] = path
    return options


def idle_slots(size: int) -> collections.deque[int]:
    """The idle set of ``size`` fresh workers: each rank :data:`PREFETCH` times, round robin."""
    return collections.deque(list(range(size)) * PREFETCH)


@attrs.define
class CommManager:
    """Runs a pool's calls on the workers at the other side of ``comm`` (an intercommunicator).

    ``idle`` holds a worker's rank once per call it can take now (:data:`PREFETCH` when it is
    idle), shared by every executor of the shared pool; ``tag`` is this executor's.
    ``owns_comm``: the manager also ends the workers (``STOP``) and releases the communicator
    when its pool is done.
    """

    comm: Any
    tag: int
    idle: collections.deque[int]
    options: dict[str, Any]
    owns_comm: bool = True
    release: Callable[[Any], None] | None = None
    #: Whether the last reply came back within :data:`SHORT_CALL` per call (batch the next).
    short_calls: bool = False
    #: How many workers there are (known once the manager runs).
    workers: int = 0
    #: Calls of batches a worker could not receive (none ran), to send again one by one.
    retry: collections.deque[tuple[Future[Any], Task]] = attrs.field(factory=collections.deque)

    def __call__(self, pool: Pool) -> None:
        serialized = state().serialized
        size = self.workers = self.comm.Get_remote_size()
        try:
            failure = self._setup(size, serialized)
            if failure is not None:
                pool.break_down(failure)
                return
            pool.started(size)
            self._dispatch(pool, serialized)
        finally:
            if self.owns_comm:
                # On the calls' transport: a worker receives every message of this executor's
                # tag through it (a plain message read as pkl5's would leave it waiting).
                link = transport(self.comm, self.options)
                with serialized():
                    stops = [link.isend((_wire.STOP,), worker, self.tag) for worker in range(size)]
                    for stop in stops:
                        stop.wait()
                    if self.release is not None:
                        self.release(self.comm)

    def _setup(self, size: int, serialized: Any) -> str | None:
        """Send every worker the setup (options, initializer); why it failed, if it did."""
        message = (_wire.SETUP, self.options)
        with serialized():
            requests = [
                _wire.send_any(self.comm, message, worker, self.tag) for worker in range(size)
            ]
        failure = None
        for worker in range(size):
            with serialized():
                success, error = self.comm.recv(None, worker, self.tag)
            if not success and failure is None:
                setup_error = isinstance(error, _wire.SetupError)
                failure = str(error) if setup_error else "initializer failed"
        with serialized():
            MPI.Request.Waitall(requests)
        return failure

    def _dispatch(self, pool: Pool, serialized: Any) -> None:
        """Send calls to idle workers and complete futures from replies until the queue ends."""
        comm = transport(self.comm, self.options)
        #: Per worker, the calls sent to it and not answered yet, in the order sent (a worker
        #: answers one executor's calls in order: same source, same tag).
        pending: dict[int, collections.deque[tuple[Future[Any], Any]]] = {}
        limit = backoff_limit(self.options)
        threads_free = MPI.Query_thread() >= MPI.THREAD_MULTIPLE
        pause = 0.0
        ending = False
        while True:
            sent, ending = self._hand_out(pool, comm, pending, serialized, ending)
            # Nothing more can be sent (no idle worker, or the queue has ended): wait for a reply
            # in a blocking probe rather than polling (MPI must then take calls from any thread).
            block = bool(pending) and (not self.idle or ending) and threads_free
            received = self._collect(comm, pending, serialized, block)
            if ending and not pending and not self.retry:
                return
            if sent or received:
                pause = 0.0
                continue
            pause = min(limit, max(limit / 1024, pause * 2))
            if pending:
                pool.sleep(pause)  # a reply may come, or a new call for an idle worker
            elif not self.idle:
                time.sleep(pause)  # the shared workers are busy with other executors' calls
            else:
                pool.sleep(None)  # nothing runs: wait for a call

    def _hand_out(
        self, pool: Pool, comm: Any, pending: dict[int, Any], serialized: Any, ending: bool
    ) -> tuple[bool, bool]:
        """Send queued calls while workers can take them: (whether any was taken, ending)."""
        sent = False
        while self.retry and self.idle:
            sent = True
            self._post([self.retry.popleft()], comm, pending, serialized)
        while not ending and self.idle:
            item = pool.take()
            if item is False:
                break
            if item is None:
                return sent, True
            assert not isinstance(item, bool)
            sent = True
            items = [item]
            if self.short_calls:
                share = min(MAX_BATCH, pool.queued() // len(self.idle) + 1)
                while len(items) < share:
                    more = pool.take()
                    if more is None:
                        ending = True
                        break
                    if more is False:
                        break
                    assert not isinstance(more, bool)
                    items.append(more)
                    del more
            self._send(items, comm, pending, serialized)
            del item, items
        return sent, ending

    def _collect(self, comm: Any, pending: dict[int, Any], serialized: Any, block: bool) -> bool:
        """Complete the futures of the replies there are (waiting for one if ``block``)."""
        status = MPI.Status()
        received = False
        while pending:
            with serialized():
                if block:
                    comm.Probe(MPI.ANY_SOURCE, self.tag, status)
                    block = False
                elif not comm.iprobe(MPI.ANY_SOURCE, self.tag, status):
                    break
                worker = status.Get_source()
                queued = pending[worker]
                calls, request, sent_at = queued.popleft()
                if not queued:
                    del pending[worker]
                replied = True
                try:
                    ok, value = comm.recv(None, worker, self.tag)
                except BaseException as error:
                    ok, value, replied = False, error, False
                request.wait()
            self.idle.append(worker)
            received = True
            self.short_calls = time.monotonic() - sent_at < SHORT_CALL * len(calls)
            if len(calls) == 1:
                _settle(calls[0][0], ok, value)
            elif ok:
                for (future, _), blob in zip(calls, value, strict=True):
                    _settle(future, *_wire.unpack(blob))
            elif replied:  # the worker could not receive the batch: none of its calls ran
                self.retry.extend(calls)
            else:  # the reply itself was lost: every call of the batch fails with it
                for future, _ in calls:
                    future.set_exception(value)
            del calls, value
        return received

    def _send(
        self,
        items: list[tuple[Future[Any], Task]],
        comm: Any,
        pending: dict[int, Any],
        serialized: Any,
    ) -> None:
        """Send the calls of ``items`` that were not cancelled meanwhile."""
        running = [item for item in items if item[0].set_running_or_notify_cancel()]
        if running:
            self._post(running, comm, pending, serialized)

    def _next_worker(self, pending: dict[int, Any]) -> int:
        """Take the idle slot of a worker that has none of this executor's calls in hand, if
        there is one, else the first idle slot.

        Why: a worker's second slot (:data:`PREFETCH`) queues a call behind the one it runs; as
        long as another worker has nothing to do, a call waiting behind a long one would be
        late for no reason (three calls on three workers must run at once, whatever order the
        replies left the idle slots in).
        """
        idle = self.idle
        if idle[0] in pending and len(pending) < self.workers:  # else every worker has calls
            for index, worker in enumerate(idle):
                if worker not in pending:
                    del idle[index]
                    return worker
        return idle.popleft()

    def _post(
        self,
        running: list[tuple[Future[Any], Task]],
        comm: Any,
        pending: dict[int, Any],
        serialized: Any,
    ) -> None:
        """Send calls marked running to the next free slot in one message (``CALL``, or
        ``CALLS`` for several).  When a batch cannot travel, the calls that cannot fail alone
        and the others are sent again."""
        if len(running) == 1:
            fn, args, kwargs = running[0][1]
            message: tuple[Any, ...] = (_wire.CALL, fn, args, kwargs)
        else:
            message = (_wire.CALLS, [task for _, task in running])
        worker = self._next_worker(pending)
        try:
            with serialized():
                request = _wire.send_any(comm, message, worker, self.tag)
        except BaseException as error:
            self.idle.append(worker)
            travelling = [] if len(running) == 1 else _travelling(running)
            if len(travelling) in (0, len(running)):  # no call is to blame alone: all fail
                for future, _ in running:
                    if not future.done():
                        future.set_exception(error)
            else:
                self._post(travelling, comm, pending, serialized)
            return
        pending.setdefault(worker, collections.deque()).append((running, request, time.monotonic()))


def _travelling(running: list[tuple[Future[Any], Task]]) -> list[tuple[Future[Any], Task]]:
    """The calls of a batch that can travel; the others fail with their pickling error."""
    travelling = []
    for future, task in running:
        try:
            _wire.check_travels(task)
        except Exception as error:  # what pickling raised, the object's own code included
            future.set_exception(error)
        else:
            travelling.append((future, task))
    return travelling


def _settle(future: Future[Any], ok: bool, value: Any) -> None:
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def split_off(comm: MPI.Intracomm, root: int) -> tuple[Any, Any]:
    """Split ``comm`` into ``root`` alone and the others, joined by an intercommunicator.

    Collective over ``comm``.  Returns the intercommunicator and this side's intracommunicator
    (the root's own is freed at once: it has no use for it).
    """
    rank = comm.Get_rank()
    everyone = comm.Get_group()
    side = everyone.Incl([root]) if rank == root else everyone.Excl([root])
    local: Any = comm.Create(side)
    side.Free()
    everyone.Free()
    # The other side's leader, as a rank of ``comm``: the root, or the lowest rank but it.
    remote_leader = root if rank != root else (1 if root == 0 else 0)
    inter = local.Create_intercomm(0, comm, remote_leader, 0)
    if rank == root:
        local.Free()
        return inter, MPI.COMM_NULL
    return inter, local
