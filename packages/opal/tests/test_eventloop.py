"""The event loop helper: readiness callbacks, wake-ups from other threads and signals, timers."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest

from ompy.opal.eventloop import EventLoop

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def loop():
    loop = EventLoop()
    yield loop
    loop.close()


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_a_readable_descriptor_runs_its_reader_with_the_fd(loop, pair):
    a, b = pair
    seen = []
    loop.add_reader(a, seen.append)
    assert loop.run_once(0) == 0
    b.send(b"x")
    assert loop.run_once(5) == 1
    assert seen == [a.fileno()]


def test_reader_and_writer_of_one_descriptor_are_independent(loop, pair):
    a, _b = pair
    seen = []
    loop.add_reader(a, lambda fd: seen.append("read"))
    loop.add_writer(a, lambda fd: seen.append("write"))
    assert loop.run_once(5) == 1
    assert seen == ["write"]  # a fresh socket can be written, not read
    assert loop.remove_writer(a)
    assert not loop.remove_writer(a)
    assert loop.run_once(0) == 0
    assert loop.remove_reader(a)
    assert not loop.remove_reader(a)


def test_removing_what_was_never_added_or_is_closed_is_false(loop):
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    assert not loop.remove_reader(r)
    assert not loop.remove_reader(socket.socket())  # never registered


def test_a_callback_that_removes_another_ready_descriptor_stops_it_running(loop):
    first, second = os.pipe(), os.pipe()
    seen = []

    def on_first(fd):
        seen.append("first")
        loop.remove_reader(second[0])

    def on_second(fd):
        seen.append("second")
        loop.remove_reader(first[0])

    loop.add_reader(first[0], on_first)
    loop.add_reader(second[0], on_second)
    os.write(first[1], b"x")
    os.write(second[1], b"x")
    assert loop.run_once(5) == 1
    assert len(seen) == 1
    for fd in (*first, *second):
        os.close(fd)


def test_wake_from_another_thread_ends_an_unbounded_wait(loop):
    threading.Timer(0.05, loop.wake).start()
    start = time.monotonic()
    assert loop.run_once(None) == 0  # a wake-up alone runs nothing
    assert time.monotonic() - start < 5


def test_many_wake_ups_before_a_wait_are_one_and_never_block_the_waker(loop):
    for _ in range(200_000):  # far more than a pipe holds: the extra ones are dropped
        loop.wake()
    assert loop.run_once(None) == 0
    assert loop.run_once(0) == 0  # drained: nothing left to wake the next wait


def test_posted_callbacks_run_in_the_loops_thread_in_order(loop):
    ran = []
    poster = threading.Thread(
        target=lambda: [
            loop.post(lambda i=i: ran.append((i, threading.get_ident()))) for i in (1, 2)
        ]
    )
    poster.start()
    poster.join()
    assert loop.run_once(None) == 2
    assert ran == [(1, threading.get_ident()), (2, threading.get_ident())]


def test_timers_run_in_time_order_and_bound_the_wait(loop):
    ran = []
    loop.call_later(0.06, lambda: ran.append("late"))
    loop.call_later(0.02, lambda: ran.append("early"))
    start = time.monotonic()
    while len(ran) < 2:
        loop.run_once(None)  # no descriptor is ready: only the timers end these waits
    assert ran == ["early", "late"]
    assert 0.05 <= time.monotonic() - start < 5


def test_a_cancelled_timer_never_runs_nor_delays_the_next(loop):
    ran = []
    cancelled = loop.call_later(0.01, lambda: ran.append("cancelled"))
    loop.call_later(0.03, lambda: ran.append("kept"))
    cancelled.cancel()
    assert cancelled.cancelled
    assert loop.run_once(None) == 1
    assert ran == ["kept"]


def test_a_timer_runs_once(loop):
    ran = []
    timer = loop.call_at(time.monotonic(), lambda: ran.append(1))
    assert loop.run_once(0) == 1
    assert loop.run_once(0) == 0
    assert ran == [1]
    assert timer.cancelled  # spent


def test_caught_signals_wake_the_loop_and_close_gives_them_back():
    before = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(before)
    received = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: received.append(signum))
    loop = EventLoop()
    try:
        loop.catch_signals()
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        while not received:
            loop.run_once(10)
        assert received == [signal.SIGUSR1]
    finally:
        loop.close()
        signal.signal(signal.SIGUSR1, previous)
    assert signal.set_wakeup_fd(before) == before


def test_closing_twice_and_waking_a_closed_loop_do_nothing():
    loop = EventLoop()
    loop.close()
    loop.close()
    loop.wake()


def test_a_close_in_another_thread_waits_for_a_wake_that_is_writing(monkeypatch):
    """A server closing its loop while another thread posts to it: the close must not pull
    the pipe from under a wake that already decided to write (the write would hit a closed
    descriptor, or whatever reused its number)."""
    import ompy.opal.eventloop as module

    loop = EventLoop()
    real_write = os.write
    closer = threading.Thread(target=loop.close)

    def write_while_closing(fd: int, data: bytes) -> int:
        closer.start()
        closer.join(0.3)  # the close gets every chance to run now
        return real_write(fd, data)

    monkeypatch.setattr(module.os, "write", write_while_closing)
    loop.post(lambda: None)  # raised EBADF before the lock
    monkeypatch.setattr(module.os, "write", real_write)
    closer.join(5)
    assert not closer.is_alive()
    loop.wake()  # a wake after the close does nothing
