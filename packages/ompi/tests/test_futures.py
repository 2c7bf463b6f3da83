"""``ompy.futures`` in one process: combining futures, the thread executors, the executor's
API (map, starmap, chunks, buffering, shutdown) and what travels to workers by value.

The worker processes themselves (``MPICommExecutor`` at 2-4 ranks, ``python -m ompy.futures``)
are tested through ``ompy run`` in ``integration/pyhelpers``.
"""

from __future__ import annotations

import collections
import pickle
import sys
import threading
import time
from concurrent.futures import CancelledError, Future, wait
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.futures import (
    BrokenExecutor,
    MPICommExecutor,
    MPIPoolExecutor,
    ThreadPoolExecutor,
    _pools,
    _wire,
    collect,
    compose,
    get_comm_workers,
)
from ompy.futures._worker import _answer, idle_wait
from ompy.futures.pool import _setup_options
from ompy.opal.progress import ProgressEngine

#: Built on this interpreter's own MPI (see conftest.py).
pytestmark = pytest.mark.usefixtures("interpreter_mpi")


def done(value: object) -> Future[object]:
    future: Future[object] = Future()
    future.set_result(value)
    return future


def failed(error: BaseException) -> Future[object]:
    future: Future[object] = Future()
    future.set_exception(error)
    return future


# -- collect and compose -------------------------------------------------------------------------


def test_collect_keeps_order_and_repeats() -> None:
    first, second = Future(), Future()
    together = collect([first, second, first])
    assert not together.done()
    second.set_result("b")
    first.set_result("a")
    assert together.result(timeout=5) == ["a", "b", "a"]
    assert collect([]).result() == []


def test_collect_fails_with_the_first_failure_and_cancels_the_rest() -> None:
    pending: Future[object] = Future()
    together = collect([failed(KeyError("k")), pending])
    with pytest.raises(KeyError):
        together.result(timeout=5)
    assert pending.cancelled()


def test_cancelling_collect_cancels_its_inputs_and_a_cancelled_input_cancels_it() -> None:
    a, b = Future(), Future()
    together = collect([a, b])
    assert together.cancel()
    assert a.cancelled() and b.cancelled()
    c: Future[object] = Future()
    again = collect([c])
    c.cancel()
    assert again.cancelled()


def test_compose_results_and_exceptions() -> None:
    assert compose(done(2), lambda x: x * 10).result() == 20
    assert compose(done(2)).result() == 2
    with pytest.raises(ValueError, match="v"):
        compose(failed(ValueError("v"))).result()
    assert compose(failed(ValueError("v")), excepthook=str).result() == "v"
    with pytest.raises(TypeError):
        compose(failed(ValueError("v")), excepthook=TypeError).result()
    with pytest.raises(ZeroDivisionError):
        compose(done(0), lambda x: 1 / x).result()


def test_compose_cancellation_goes_both_ways() -> None:
    source: Future[object] = Future()
    composed = compose(source)
    composed.cancel()
    assert source.cancelled()
    other: Future[object] = Future()
    composed = compose(other)
    other.cancel()
    assert composed.cancelled()
    with pytest.raises(CancelledError):
        composed.result()


# -- the executor API on threads ------------------------------------------------------------------


def square(x: int) -> int:
    return x * x


@settings(max_examples=25, deadline=None)
@given(
    values=st.lists(st.integers(-1000, 1000), max_size=60),
    chunksize=st.integers(1, 7),
    buffersize=st.none() | st.integers(1, 5),
)
def test_map_equals_builtin_map(values: list[int], chunksize: int, buffersize: int | None) -> None:
    with ThreadPoolExecutor(max_workers=3) as executor:
        got = list(executor.map(square, values, chunksize=chunksize, buffersize=buffersize))
        assert got == [v * v for v in values]
        unordered = executor.map(square, values, chunksize=chunksize, unordered=True)
        assert sorted(unordered) == sorted(v * v for v in values)
        pairs = [(v, 2) for v in values]
        assert list(executor.starmap(pow, pairs, chunksize=chunksize)) == [v**2 for v in values]


def test_map_arguments_are_checked() -> None:
    with ThreadPoolExecutor() as executor:
        with pytest.raises(ValueError, match="chunksize"):
            executor.map(square, [1], chunksize=0)
        with pytest.raises(TypeError, match="buffersize"):
            executor.map(square, [1], buffersize=1.5)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="buffersize"):
            executor.map(square, [1], buffersize=0)
        with pytest.raises(ValueError, match="unordered"):
            executor.map(square, [1], buffersize=2, unordered=True)
    with pytest.raises(ValueError, match="max_workers"):
        MPIPoolExecutor(max_workers=0)
    with pytest.raises(TypeError, match="initializer"):
        MPIPoolExecutor(initializer=3)  # type: ignore[arg-type]


def test_map_timeout_and_failure() -> None:
    with ThreadPoolExecutor(max_workers=1) as executor:
        results = executor.map(time.sleep, [0.5, 0.5], timeout=0.05)
        with pytest.raises(TimeoutError):
            next(results)
        failing = executor.map(lambda x: 1 // x, [1, 0, 2])
        assert next(failing) == 1
        with pytest.raises(ZeroDivisionError):
            next(failing)


def test_shutdown_cancels_queued_calls_and_refuses_new_ones() -> None:
    gate = threading.Event()
    executor = ThreadPoolExecutor(max_workers=1)
    running = executor.submit(gate.wait)
    deadline = time.monotonic() + 10
    while not running.running() and time.monotonic() < deadline:
        time.sleep(0.001)
    queued = [executor.submit(square, n) for n in range(5)]
    executor.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert running.result(timeout=10) is True
    assert all(f.cancelled() or f.done() for f in queued)
    assert any(f.cancelled() for f in queued)
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(square, 1)
    with pytest.raises(RuntimeError, match="bootup after shutdown"):
        executor.bootup()
    executor.shutdown()
    assert executor.num_workers == 0


def test_failing_initializer_breaks_the_pool() -> None:
    def boom() -> None:
        raise OSError("no")

    executor = ThreadPoolExecutor(max_workers=2, initializer=boom)
    future = executor.submit(square, 3)
    with pytest.raises(BrokenExecutor, match="initializer failed"):
        future.result(timeout=10)
    with pytest.raises(BrokenExecutor):
        executor.submit(square, 3)
    assert executor.num_workers == 0
    executor.shutdown()


def test_initializer_and_workers_comm_on_threads() -> None:
    seen = []
    with ThreadPoolExecutor(max_workers=2, initializer=seen.append, initargs=("hi",)) as executor:
        assert executor.bootup() is executor
        assert executor.num_workers == 2
        assert executor.submit(get_comm_workers).result() == MPI.COMM_SELF
    assert seen == ["hi", "hi"]
    with pytest.raises(RuntimeError, match="not accessible"):
        get_comm_workers()


def test_comm_executor_on_one_process_runs_on_a_thread() -> None:
    with pytest.raises(ValueError, match="intracommunicator"):
        MPICommExecutor(_FakeInter())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="root"):
        MPICommExecutor(MPI.COMM_SELF, root=1)
    context = MPICommExecutor(MPI.COMM_SELF)
    with context as executor:
        assert executor is not None
        assert list(executor.map(square, range(10))) == [n * n for n in range(10)]
        assert executor.num_workers == 1
        with pytest.raises(RuntimeError, match="already entered"):
            context.__enter__()


class _FakeInter:
    def Is_inter(self) -> bool:
        return True


# -- what goes by value --------------------------------------------------------------------------


def test_what_pickle_refuses_goes_by_value() -> None:
    def make(offset: int):
        return lambda x: x + offset

    message = (_wire.CALL, make(5), (1,), {})
    with pytest.raises(_wire.PICKLING_ERRORS):
        pickle.dumps(message)
    travelled = pickle.loads(pickle.dumps(_wire.ByValue(message)))
    _, fn, args, kwargs = travelled
    assert fn(*args, **kwargs) == 6


class _Unpicklable:
    def __reduce__(self) -> tuple[Any, ...]:
        raise TypeError("cannot travel")


def _half_of_even(x: int) -> int:
    if x % 2:
        raise ValueError(f"odd {x}")
    return x // 2


def test_a_batch_gets_one_reply_per_call_and_a_failing_call_fails_alone() -> None:
    tasks = [(_half_of_even, (x,), {}) for x in range(5)]
    ok, blobs = _answer((_wire.CALLS, tasks), "Worker 0 of 1 on node")
    assert ok
    replies = [_wire.unpack(blob) for blob in blobs]
    assert [reply[0] for reply in replies] == [True, False, True, False, True]
    assert [reply[1] for reply in replies if reply[0]] == [0, 1, 2]
    errors = [reply[1] for reply in replies if not reply[0]]
    assert [str(error) for error in errors] == ["odd 1", "odd 3"]
    assert all(isinstance(error, ValueError) for error in errors)
    assert all("### Worker 0 of 1 on node" in str(error.__cause__) for error in errors)


class _BadState:
    def __getstate__(self) -> object:
        return 1 / 0


class _BadUnpickle:
    def __reduce__(self) -> tuple[Any, ...]:
        return _raise_on_load, ()


def _raise_on_load() -> None:
    raise ZeroDivisionError("cannot be rebuilt")


def test_each_reply_of_a_batch_travels_alone() -> None:
    where = "Worker 2 of 3"
    assert _wire.unpack(_wire.pack((True, 5), where)) == (True, 5)
    assert _wire.unpack(_wire.pack((True, lambda: 5), where))[1]() == 5  # by cloudpickle
    ok, error = _wire.unpack(_wire.pack((True, _Unpicklable()), where))
    assert not ok
    assert isinstance(error, RuntimeError)
    assert "could not be pickled" in str(error)
    # The object's own pickling code failing is the call's error, as with mpi4py.futures.
    ok, error = _wire.unpack(_wire.pack((True, _BadState()), where))
    assert not ok
    assert isinstance(error, ZeroDivisionError)
    assert where in str(error.__cause__)
    # A result that cannot be rebuilt by the executor fails alone too.
    ok, error = _wire.unpack(_wire.pack((True, _BadUnpickle()), where))
    assert not ok
    assert isinstance(error, ZeroDivisionError)
    with pytest.raises(TypeError, match="cannot travel"):
        _wire.check_travels((_Unpicklable(),))
    with pytest.raises(ZeroDivisionError):
        _wire.check_travels((_BadState(),))
    _wire.check_travels((lambda: 1, (), {}))


def test_remote_errors_arrive_with_the_workers_traceback() -> None:
    try:
        {}["missing"]
    except KeyError as error:
        wrapped = _wire.remote_error(error, "Worker 3 of 4 on node")
    arrived = pickle.loads(pickle.dumps(wrapped))
    assert isinstance(arrived, KeyError)
    assert isinstance(arrived.__cause__, _wire.RemoteTraceback)
    assert "### Worker 3 of 4 on node" in str(arrived.__cause__)
    assert "KeyError: 'missing'" in str(arrived.__cause__)


# -- a worker waiting for its next call ----------------------------------------------------------


def _idle_passes(engine: ProgressEngine, seconds: float) -> int:
    """How many progress passes a wait on nothing makes in ``seconds``."""
    passes = 0

    def idle() -> int:
        nonlocal passes
        passes += 1
        return 0

    engine.register(idle)
    try:
        assert not engine.wait_until(lambda: False, timeout=seconds)
    finally:
        engine.unregister(idle)
    return passes


def test_idle_wait_sleeps_at_once_instead_of_spinning() -> None:
    engine = ProgressEngine(spin_count=100_000, block_max_ms=5.0)
    try:
        spinning = _idle_passes(engine, 0.05)
        with idle_wait(engine):
            assert engine.spin_count == 0
            patient = _idle_passes(engine, 0.05)
        # Spinning polls as fast as it can for the whole 50 ms; sleeping from the first idle
        # pass (50 us, doubling up to 5 ms) makes about a dozen passes.
        assert spinning > 300
        assert patient < 100
        assert engine.spin_count == 100_000
    finally:
        engine.close()


def test_idle_wait_restores_the_spin_after_an_error() -> None:
    engine = ProgressEngine(spin_count=7)
    try:
        with pytest.raises(KeyError), idle_wait(engine):
            raise KeyError("probe failed")
        assert engine.spin_count == 7
    finally:
        engine.close()


# -- what mpi4py.futures' own tests expect of the executor ---------------------------------------


def test_calls_cancelled_by_shutdown_count_as_done_for_wait() -> None:
    """``concurrent.futures.wait`` sees a cancelled future only once it is notified: calls
    cancelled by ``shutdown(cancel_futures=True)`` must not leave ``wait`` blocked."""
    gate = threading.Event()
    executor = ThreadPoolExecutor(max_workers=1)
    running = executor.submit(gate.wait)
    queued = [executor.submit(square, n) for n in range(5)]
    deadline = time.monotonic() + 10
    while not running.running() and time.monotonic() < deadline:
        time.sleep(0.001)
    executor.shutdown(wait=False, cancel_futures=True)
    _, not_done = wait(queued, timeout=5)
    assert not not_done
    assert all(f.cancelled() for f in queued)
    gate.set()
    executor.shutdown(wait=True)
    assert running.result(timeout=10) is True


def test_the_pool_ends_with_its_queue_empty_and_refuses_late_calls() -> None:
    executor = ThreadPoolExecutor(max_workers=1)
    assert executor.submit(square, 3).result(timeout=10) == 9
    pool = executor._pool
    assert pool is not None
    executor.shutdown(wait=True)
    assert pool.event.is_set()
    assert not pool.thread.is_alive()
    with pytest.raises(LookupError):
        pool.queue.pop()
    late: Future[Any] = Future()
    pool.push((late, (square, (2,), {})))  # nobody would ever run it: cancelled at once
    assert late.cancelled()
    assert not pool.queue


@given(value=st.sampled_from(["1", "true", "YES", " on ", "y", "0", "False", "no", "OFF", "n", ""]))
def test_yes_no_environment_values(value: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMPY_TEST_FLAG", value)
        expected = value.strip().lower() in ("1", "true", "yes", "on", "y")
        assert _pools.env_flag("OMPY_TEST_FLAG") is expected


@given(value=st.text(min_size=1).filter(lambda v: "\x00" not in v))
def test_other_environment_values_warn_and_count_as_no(value: str) -> None:
    yes_no = ("", "0", "false", "no", "off", "n", "1", "true", "yes", "on", "y")
    if value.strip().lower() in yes_no:
        return
    with pytest.MonkeyPatch.context() as patch:
        try:
            patch.setenv("OMPY_TEST_FLAG", value)
        except (ValueError, UnicodeEncodeError):
            return  # not a value an environment can hold
        with pytest.warns(RuntimeWarning, match="OMPY_TEST_FLAG: unexpected value") as told:
            assert _pools.env_flag("OMPY_TEST_FLAG") is False
    assert repr(value) in str(told[0].message)


def test_use_pkl5_comes_from_the_environment_unless_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMPY_FUTURES_USE_PKL5", "true")
    assert _setup_options({"main": False})["use_pkl5"] is True
    assert _setup_options({"main": False, "use_pkl5": False})["use_pkl5"] is False
    monkeypatch.setenv("OMPY_FUTURES_USE_PKL5", "maybe")
    with pytest.warns(RuntimeWarning, match="'maybe'"):
        assert _setup_options({"main": False})["use_pkl5"] is False


class _MadeOnAWorker:
    """Stands for a class of the program's main script as a worker pickles it."""


def test_the_workers_name_for_the_main_module_resolves_here(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker runs the program's script as ``__worker__``: what it pickles by reference
    from there (``__worker__.Point``) must unpickle in the executor's process, where the
    script is ``__main__``."""
    main = type(sys)("__main__")
    monkeypatch.setitem(sys.modules, "__main__", main)
    monkeypatch.delitem(sys.modules, _wire.MAIN_RUN_NAME, raising=False)
    _MadeOnAWorker.__module__ = _wire.MAIN_RUN_NAME
    _MadeOnAWorker.__qualname__ = "Point"
    main.Point = _MadeOnAWorker  # type: ignore[attr-defined]
    try:
        _pools.main_module_options()
        assert sys.modules[_wire.MAIN_RUN_NAME] is main
        blob = pickle.dumps(_MadeOnAWorker())
        assert b"__worker__" in blob
        assert type(pickle.loads(blob)) is _MadeOnAWorker
    finally:
        _MadeOnAWorker.__module__ = __name__
        _MadeOnAWorker.__qualname__ = "_MadeOnAWorker"


def test_a_worker_keeps_its_own_main_module_under_the_workers_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    imported = type(sys)(_wire.MAIN_RUN_NAME)
    monkeypatch.setitem(sys.modules, _wire.MAIN_RUN_NAME, imported)
    _wire.alias_main()
    assert sys.modules[_wire.MAIN_RUN_NAME] is imported


def test_a_call_goes_to_a_worker_with_nothing_in_hand_first() -> None:
    """Three calls on three workers run at once, whatever order the idle slots are in."""
    manager = _pools.CommManager(None, 0, collections.deque([0, 0, 1, 1, 2, 2]), {}, workers=3)
    pending: dict[int, Any] = {}
    taken = []
    for _ in range(3):
        worker = manager._next_worker(pending)
        pending.setdefault(worker, []).append("call")
        taken.append(worker)
    assert taken == [0, 1, 2]
    assert manager._next_worker(pending) == 0  # every worker busy: the first slot
    assert list(manager.idle) == [1, 2]
