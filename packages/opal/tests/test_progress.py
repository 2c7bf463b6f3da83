"""The progress engine: callbacks, blocking waits that sleep on file descriptors, parameters."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from ompy.opal.mca.params import Registry
from ompy.opal.progress import ProgressEngine, register_params


@pytest.fixture
def engine():
    engine = ProgressEngine(spin_count=100, block_max_ms=20)
    yield engine
    engine.close()


def test_progress_calls_every_callback_once_and_sums_their_events(engine):
    calls = []
    engine.register(lambda: calls.append("a") or 2)
    engine.register(lambda: calls.append("b") or 3)
    assert engine.progress() == 5
    assert calls == ["a", "b"]


def test_unregistered_callback_is_no_longer_called(engine):
    calls = []

    def callback():
        calls.append(1)
        return 1

    engine.register(callback)
    engine.progress()
    engine.unregister(callback)
    assert engine.progress() == 0
    assert calls == [1]


def test_double_registration_and_unknown_unregistration_are_errors(engine):
    def callback():
        return 0

    engine.register(callback)
    with pytest.raises(ValueError, match="already registered"):
        engine.register(callback)
    engine.unregister(callback)
    with pytest.raises(ValueError, match="not registered"):
        engine.unregister(callback)


def test_wait_until_progresses_until_the_predicate_holds(engine):
    counter = {"n": 0}

    def callback():
        counter["n"] += 1
        return 1

    engine.register(callback)
    assert engine.wait_until(lambda: counter["n"] >= 50, timeout=5)
    assert counter["n"] == 50


class Request:
    """Anything with a ``complete`` attribute: what wait_for waits on."""

    complete = False


def test_wait_for_progresses_until_the_request_completes_and_checks_it_after_every_pass(engine):
    request, passes = Request(), []

    def callback():
        passes.append(1)
        if len(passes) == 30:
            request.complete = True
        return 0  # idle passes: the request is still checked after each one

    engine.register(callback)
    assert engine.wait_for(request, timeout=5)
    assert len(passes) == 30
    assert engine.wait_for(request, timeout=0) and len(passes) == 30, "complete: no pass"


def test_wait_for_times_out_and_sleeps_while_idle(engine):
    start_cpu, start = time.process_time(), time.monotonic()
    assert not engine.wait_for(Request(), timeout=0.3)
    elapsed, cpu = time.monotonic() - start, time.process_time() - start_cpu
    assert elapsed >= 0.29 and cpu < 0.1 * elapsed


def test_wait_until_times_out_and_says_so(engine):
    start = time.monotonic()
    assert not engine.wait_until(lambda: False, timeout=0.1)
    assert 0.09 <= time.monotonic() - start < 1.0


def test_an_idle_blocked_wait_sleeps_instead_of_spinning(engine):
    start_cpu = time.process_time()
    start = time.monotonic()
    assert not engine.wait_until(lambda: False, timeout=0.5)
    elapsed = time.monotonic() - start
    cpu = time.process_time() - start_cpu
    assert elapsed >= 0.45
    assert cpu < 0.1 * elapsed, f"an idle wait used {cpu:.3f} s of CPU in {elapsed:.3f} s"


def test_a_readable_registered_fd_wakes_a_sleeping_wait_promptly():
    engine = ProgressEngine(spin_count=0, block_max_ms=5000)
    left, right = socket.socketpair()
    left.setblocking(False)
    received = []

    def poll():
        try:
            data = left.recv(16)
        except BlockingIOError:
            return 0
        received.append(data)
        return 1

    engine.register(poll)
    engine.register_fd(left.fileno())
    timer = threading.Timer(0.2, right.send, args=(b"x",))
    try:
        timer.start()
        start = time.monotonic()
        assert engine.wait_until(lambda: bool(received), timeout=4)
        woke_after = time.monotonic() - start
    finally:
        timer.cancel()
        left.close()
        right.close()
        engine.close()
    # With a 5 s maximum sleep, only the fd can explain waking within a second.
    assert woke_after < 1.0


def test_wakeup_from_another_thread_ends_a_sleep_at_once():
    engine = ProgressEngine(spin_count=0, block_max_ms=5000)
    flag = threading.Event()

    def set_and_wake():
        flag.set()
        engine.wakeup()

    timer = threading.Timer(0.2, set_and_wake)
    try:
        timer.start()
        start = time.monotonic()
        assert engine.wait_until(flag.is_set, timeout=4)
        assert time.monotonic() - start < 1.0
    finally:
        timer.cancel()
        engine.close()


def test_fd_registrations_are_counted(engine):
    left, right = socket.socketpair()
    try:
        engine.register_fd(left.fileno())
        engine.register_fd(left.fileno())
        engine.unregister_fd(left.fileno())
        engine.unregister_fd(left.fileno())
        with pytest.raises(ValueError, match="not registered"):
            engine.unregister_fd(left.fileno())
    finally:
        left.close()
        right.close()


@pytest.mark.parametrize(
    ("setting", "oversubscribed", "yields"),
    [
        (None, True, True),  # unset: the run-time's word on the node decides
        (None, False, False),
        ("0", True, False),  # set (from any source): the user decides
        ("1", False, True),
    ],
)
def test_yield_when_idle_follows_the_node_unless_the_user_set_it(setting, oversubscribed, yields):
    environ = {} if setting is None else {"OMPY_MCA_opal_progress_yield_when_idle": setting}
    engine = ProgressEngine.from_params(
        Registry(environ=environ, files=[]), oversubscribed=oversubscribed
    )
    try:
        assert engine.yield_when_idle is yields
    finally:
        engine.close()


def test_the_yield_parameter_does_not_read_the_launchers_variables(monkeypatch):
    monkeypatch.setenv("OMPY_OVERSUBSCRIBED", "1")  # identity: it reaches opal through the ess
    registry = Registry(files=[])
    register_params(registry)
    resolved = registry.resolve("opal_progress_yield_when_idle")
    assert (resolved.value, str(resolved.source)) == (False, "default")


def test_engine_reads_its_parameters_from_the_registry():
    registry = Registry(
        environ={
            "OMPY_MCA_opal_progress_spin_count": "7",
            "OMPY_MCA_opal_progress_yield_when_idle": "1",
        }
    )
    engine = ProgressEngine.from_params(registry)
    try:
        assert engine.spin_count == 7
        assert engine.yield_when_idle is True
    finally:
        engine.close()


def test_a_bad_spin_count_names_the_parameter():
    registry = Registry(environ={"OMPY_MCA_opal_progress_spin_count": "-3"})
    with pytest.raises(ValueError, match="opal_progress_spin_count"):
        ProgressEngine.from_params(registry)


def test_close_releases_the_wakeup_pipe():
    before = len(os.listdir("/proc/self/fd"))
    engine = ProgressEngine()
    engine.close()
    engine.close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_sleep_hooks_run_before_every_idle_sleep_and_can_veto_it():
    engine = ProgressEngine(spin_count=0, block_max_ms=5000)
    calls = []
    sleeps = []
    work = []
    engine._sleep = sleeps.append

    def hook():
        calls.append(len(sleeps))
        if len(calls) == 1:
            work.append("arrived just before the flag was visible")
            return False  # veto: progress again instead of sleeping
        return True

    engine.register(lambda: len(work) and not work.append("done") and 1)
    engine.register_sleep_hook(hook)
    try:
        assert engine.wait_until(lambda: "done" in work, timeout=4)
    finally:
        engine.close()
    assert calls == [0], "the vetoed sleep must not happen; the next pass finds the work"
    assert sleeps == []


@pytest.mark.timeout(10)
def test_every_sleep_hook_runs_even_when_one_vetoes_and_the_deadline_still_holds():
    engine = ProgressEngine(spin_count=0, block_max_ms=1)
    seen = []
    engine.register_sleep_hook(lambda: seen.append("a") or False)
    engine.register_sleep_hook(lambda: seen.append("b") or True)
    try:
        assert not engine.wait_until(lambda: False, timeout=0.01)
    finally:
        engine.close()
    assert seen[:2] == ["a", "b"]


def test_double_sleep_hook_registration_and_unknown_unregistration_are_errors(engine):
    def hook():
        return True

    engine.register_sleep_hook(hook)
    with pytest.raises(ValueError, match="already registered"):
        engine.register_sleep_hook(hook)
    engine.unregister_sleep_hook(hook)
    with pytest.raises(ValueError, match="not registered"):
        engine.unregister_sleep_hook(hook)
