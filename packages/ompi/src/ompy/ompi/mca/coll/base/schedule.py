"""The schedule engine: collectives written once, run blocking or from the progress engine.

An algorithm is a generator function ``algorithm(comm, tag, *args)`` that starts point-to-point
operations, yields each *round* (a sequence of requests that must all complete before it may go
on), and does its local work (copies, reductions) between yields::

    def ring_allgather(comm, tag, spec):
        for step in range(comm.size - 1):
            yield (send(comm, ..., right, tag), recv(comm, ..., left, tag))
            ...                                # local work once both are complete

Open MPI's libnbc describes a schedule as rounds of send/recv/op/copy steps; a generator is the
same thing in Python with none of the bookkeeping.  The same generator serves both forms:

- :func:`run_schedule` drives it in the caller (a blocking collective): each round is waited for
  with the progress engine, so other schedules in flight keep moving meanwhile;
- :func:`start_schedule` returns a :class:`Schedule` (a ``CoreRequest``) whose first round is
  posted at once and whose later rounds are started by a progress callback, so a nonblocking
  collective advances whenever the process is inside any MPI call, without the caller blocking.

Each call draws its own tag from :func:`~.tags.next_tag` (or :func:`~.tags.claim_tag`), so
calls in flight together on one communicator never exchange messages.  A request of a round
that fails fails the schedule with the same error; an exception raised by the generator's local
work does too (its MPI error class, or ``ERR_OTHER``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol, TypeAlias

from ....completion import CoreRequest
from ....errors import ERR_OTHER
from ....errors import Exception as MPIException
from .tags import claim_tag, next_tag

#: What an algorithm yields: the requests of one round (or a single request).
Round: TypeAlias = Sequence[Any]
#: ``algorithm(comm, tag, *args)``: a generator of rounds.
Algorithm: TypeAlias = Callable[..., Generator[Any, None, None]]

_NOTHING: tuple[Any, ...] = ()


def _as_round(value: Any) -> tuple[Any, ...]:
    if value is None:
        return _NOTHING
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    if hasattr(value, "complete"):
        return (value,)
    raise TypeError(
        f"a collective schedule yielded {type(value).__name__}; a round is a sequence of "
        "requests (or one request, or None)"
    )


def _error_class(error: BaseException) -> int:
    return error.error_class if isinstance(error, MPIException) else ERR_OTHER


def run_schedule(comm: Any, algorithm: Algorithm, *args: Any) -> None:
    """Run ``algorithm(comm, tag, *args)`` to completion in the caller (a blocking collective)."""
    tag = next_tag(comm)
    generator = algorithm(comm, tag, *args)
    wait_until = comm.engine.wait_until
    for value in generator:
        pending = _as_round(value)
        for request in pending:
            if not request.complete:
                wait_until(_all_complete(pending))
                break
        for request in pending:
            if request.exception is not None:
                generator.close()
                raise request.exception


def _all_complete(requests: tuple[Any, ...]) -> Callable[[], bool]:
    return lambda: all(request.complete for request in requests)


class Schedule(CoreRequest):
    """A nonblocking collective in flight: a generator of rounds advanced by progress.

    ``result`` is what ``Request.wait()`` returns (``None`` unless the starter sets it).
    """

    __slots__ = ("_after", "_generator", "_pending", "comm", "result")

    def __init__(self, comm: Any, generator: Generator[Any, None, None], after: Any) -> None:
        super().__init__()
        self.comm = comm
        self.result: Any = None
        self._generator = generator
        self._pending: tuple[Any, ...] = _NOTHING
        #: The earlier call on the same tag, which must complete before this one starts.
        self._after = after

    def advance(self) -> bool:
        """Start every round whose predecessors are complete; whether anything moved."""
        if self.complete:
            return False
        after = self._after
        if after is not None:
            if not after.complete:
                return False
            self._after = None
        moved = False
        generator = self._generator
        while True:
            for request in self._pending:
                if not request.complete:
                    return moved
            for request in self._pending:
                if request.exception is not None:
                    generator.close()
                    self.fail(request.error or _error_class(request.exception), request.exception)
                    return True
            moved = True
            try:
                self._pending = _as_round(next(generator))
            except StopIteration:
                self._pending = _NOTHING
                self.finish()
                return True
            except Exception as error:  # the algorithm's local work failed: report it
                self._pending = _NOTHING
                self.fail(_error_class(error), error)
                return True

    def __repr__(self) -> str:
        state = "complete" if self.complete else "pending"
        return f"<Schedule {state} on {getattr(self.comm, 'name', self.comm)!r}>"


def start_schedule(comm: Any, algorithm: Algorithm, *args: Any) -> Schedule:
    """Start ``algorithm(comm, tag, *args)`` as a nonblocking collective; its request.

    The first round is posted before this returns (unless an earlier call on the same tag is
    still in flight); the rest follow from the progress engine.
    """
    # Under the MPI lock: with THREAD_MULTIPLE another thread's progress pass may be running
    # the runner (its list of schedules, its registration) at this moment.
    with comm.engine.lock:
        tag, after = claim_tag(comm)
        schedule = Schedule(comm, algorithm(comm, tag, *args), after)
        comm.coll.inflight[tag] = schedule
        schedule.advance()
        if not schedule.complete:
            _runner(comm.engine).add(schedule)
    return schedule


class Advancing(Protocol):
    """What the runner advances: a schedule, or a start of a persistent collective."""

    @property
    def complete(self) -> bool: ...
    def advance(self) -> bool: ...


def track(engine: Any, item: Advancing) -> None:
    """Have ``engine``'s progress advance ``item`` until it completes (call under its lock)."""
    _runner(engine).add(item)


class _Runner:
    """The progress callback of one progress engine: advances its schedules in flight.

    It is registered only while schedules are in flight, so point-to-point progress pays
    nothing for collectives when none is pending.
    """

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.active: list[Advancing] = []
        self.registered = False

    def add(self, schedule: Advancing) -> None:
        self.active.append(schedule)
        if not self.registered:
            self.engine.register(self.progress)
            self.registered = True

    def progress(self) -> int:
        current, self.active = self.active, []
        events = 0
        still = []
        for schedule in current:
            if schedule.advance():
                events += 1
            if not schedule.complete:
                still.append(schedule)
        # Schedules started while advancing (self.active) run after the older ones.
        self.active = still + self.active
        if not self.active and self.registered:
            self.engine.unregister(self.progress)
            self.registered = False
        return events


_runners: weakref.WeakKeyDictionary[Any, _Runner] = weakref.WeakKeyDictionary()


def _runner(engine: Any) -> _Runner:
    runner = _runners.get(engine)
    if runner is None:
        runner = _runners[engine] = _Runner(engine)
    return runner


def in_flight(engine: Any) -> int:
    """How many nonblocking collectives the progress engine ``engine`` is advancing."""
    runner = _runners.get(engine)
    return 0 if runner is None else len(runner.active)
