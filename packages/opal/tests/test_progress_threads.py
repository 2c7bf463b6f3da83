"""The progress engine's threaded mode (MPI_THREAD_MULTIPLE): one pass at a time, no lost wake-up.

Several threads wait in one engine; each one's progress pass may complete another's request,
and the waiter must see it promptly whether it was spinning, waiting on the engine's condition
or sleeping on the descriptors.
"""

from __future__ import annotations

import os
import threading
import time

from ompy.opal.progress import ProgressEngine


class Request:
    def __init__(self) -> None:
        self.complete = False


def test_single_mode_takes_no_lock_and_threaded_mode_is_chosen_once():
    engine = ProgressEngine()
    try:
        assert not engine.threaded and engine.progress == engine._progress
        engine.enable_threads()
        assert engine.threaded and engine.progress == engine._progress_threaded
    finally:
        engine.close()
    engine = ProgressEngine(thread_safe=True)
    assert engine.threaded
    engine.close()


def test_threaded_passes_never_overlap_and_a_second_thread_waits_for_the_first():
    engine = ProgressEngine(thread_safe=True)
    inside = threading.Event()
    release = threading.Event()
    active = []
    overlaps = []

    def callback() -> int:
        if active:
            overlaps.append(True)
        active.append(1)
        inside.set()
        release.wait(5)
        active.pop()
        return 1

    engine.register(callback)
    worker = threading.Thread(target=engine.progress)
    try:
        worker.start()
        assert inside.wait(5)
        second: list[int] = []
        other = threading.Thread(target=lambda: second.append(engine.progress()))
        other.start()
        time.sleep(0.05)
        assert second == []  # blocked behind the first pass
        release.set()
        other.join(5)
        assert second == [1] and not overlaps
    finally:
        release.set()
        worker.join(5)
        engine.close()


def test_the_entry_lock_is_reentrant_so_an_entry_point_may_progress():
    engine = ProgressEngine(thread_safe=True)
    engine.register(lambda: 1)
    try:
        with engine.lock:
            assert engine.progress() == 1
    finally:
        engine.close()


def completer(engine: ProgressEngine, request: Request, delay: float) -> threading.Thread:
    """A thread that completes ``request`` from its own progress pass after ``delay`` seconds."""
    due = time.monotonic() + delay

    def callback() -> int:
        if not request.complete and time.monotonic() >= due:
            request.complete = True
            return 1
        return 0

    def run() -> None:
        engine.register(callback)
        engine.wait_until(lambda: request.complete, timeout=10)

    return threading.Thread(target=run)


def test_a_request_completed_by_another_threads_pass_ends_the_wait_promptly():
    # Long sleeps: a waiter that missed the completion would sleep up to 2 s.
    engine = ProgressEngine(thread_safe=True, spin_count=0, block_max_ms=2000)
    try:
        request = Request()
        waiters: list[float] = []

        def wait() -> None:
            start = time.monotonic()
            assert engine.wait_for(request, timeout=10)
            waiters.append(time.monotonic() - start)

        threads = [threading.Thread(target=wait) for _ in range(3)]
        for thread in threads:
            thread.start()
        time.sleep(0.3)  # everyone asleep: one on the descriptors, the others on the condition
        worker = completer(engine, request, 0.0)
        worker.start()
        for thread in [*threads, worker]:
            thread.join(10)
        assert len(waiters) == 3
        assert max(waiters) < 0.3 + 0.5, waiters
    finally:
        engine.close()


def test_idle_threaded_waits_sleep_instead_of_spinning():
    engine = ProgressEngine(thread_safe=True, spin_count=100, block_max_ms=20)
    engine.register(lambda: 0)
    try:
        cpu = time.process_time()
        threads = [
            threading.Thread(target=engine.wait_until, args=(lambda: False, 1.0)) for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5)
        assert time.process_time() - cpu < 0.5  # four threads waiting 1 s each
    finally:
        engine.close()


def test_only_one_thread_sleeps_on_the_descriptors_and_runs_the_sleep_hooks():
    engine = ProgressEngine(thread_safe=True, spin_count=0, block_max_ms=20)
    sleepers = []
    most = []

    def hook() -> bool:
        sleepers.append(threading.get_ident())
        most.append(engine._fd_sleeper)
        return True

    engine.register_sleep_hook(hook)
    read, write = os.pipe()
    try:
        engine.register_fd(read)
        threads = [
            threading.Thread(target=engine.wait_until, args=(lambda: False, 0.3)) for _ in range(3)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(5)
        assert sleepers and not any(most)  # no hook ran while another thread slept on the fds
    finally:
        engine.unregister_fd(read)
        os.close(read)
        os.close(write)
        engine.close()


def lock_is_free_for_another_thread(lock) -> bool:
    """Whether a thread other than the caller could take ``lock`` right now."""
    got: list[bool] = []

    def probe() -> None:
        taken = lock.acquire(blocking=False)
        got.append(taken)
        if taken:
            lock.release()

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return got[0]


def test_a_switch_inside_a_pass_holds_the_lock_for_the_rest_of_it_then_waits_threaded():
    # Lazy activation: the only thread switches when it starts a second one, which may happen
    # in a user function a progress pass runs (an Op of a nonblocking collective's schedule).
    # The rest of that pass is unlocked code: the switching thread keeps the lock until the
    # pass ends, and the wait it was in goes on as a threaded wait.
    engine = ProgressEngine(spin_count=0, block_max_ms=1.0)
    request = Request()
    seen: dict[str, object] = {}
    passes = 0

    def callback() -> int:
        nonlocal passes
        passes += 1
        if passes == 2:
            engine.enable_threads()  # what the Thread.start hook does
            seen["held in the pass"] = not lock_is_free_for_another_thread(engine.lock)
        elif passes == 3:
            seen["third pass threaded"] = engine.threaded
            seen["free between passes"] = lock_is_free_for_another_thread(engine.lock)
            request.complete = True
        return 0

    engine.register(callback)
    try:
        assert engine.wait_for(request, timeout=10)
        assert seen == {
            "held in the pass": True,
            "third pass threaded": True,
            "free between passes": False,  # the threaded pass holds it (reentrantly)...
        }
        assert lock_is_free_for_another_thread(engine.lock)  # ...and nothing holds it after
        assert engine.progress == engine._progress_threaded
    finally:
        engine.close()


def test_a_switch_by_a_waits_condition_makes_the_next_pass_a_locked_one():
    engine = ProgressEngine(spin_count=0, block_max_ms=1.0)
    tests = 0
    pass_threads: list[bool] = []
    free: list[bool] = []

    def condition() -> bool:
        nonlocal tests
        tests += 1
        if tests == 2:
            engine.enable_threads()  # the unpickling of a received object starts a thread
            # A condition runs outside the lock in a threaded wait too: no hold here, so the
            # new thread's MPI calls may run while the condition goes on.
            free.append(lock_is_free_for_another_thread(engine.lock))
        return tests == 4

    def callback() -> int:
        pass_threads.append(engine.lock._is_owned())
        return 0

    engine.register(callback)
    try:
        assert engine.wait_until(condition, timeout=10)
        # wait_until tests once before the first pass: one pass before the switch, unlocked
        assert pass_threads[:1] == [False]
        assert len(pass_threads) >= 3 and all(pass_threads[1:])  # after it: every pass locked
        assert free == [True]
        assert lock_is_free_for_another_thread(engine.lock)
    finally:
        engine.close()


def test_a_switch_outside_the_engine_takes_no_hold():
    engine = ProgressEngine()
    try:
        engine.enable_threads()
        assert lock_is_free_for_another_thread(engine.lock)
        engine.enable_threads()  # once: a second call changes nothing
        assert lock_is_free_for_another_thread(engine.lock)
    finally:
        engine.close()
