"""A Tally turns a flood of events into a summary now and then, never a line per event."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ompy.opal.tally import Tally


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_first_event_is_reported_at_once_and_a_burst_waits_for_the_interval():
    lines: list[str] = []
    clock = Clock()
    tally = Tally(lines.append, "refused connections", interval=10, clock=clock)
    tally.note("wrong secret")
    assert lines == ["refused connections: 1 (1 wrong secret)"]
    for _ in range(1000):
        clock.now += 0.001
        tally.note("wrong secret")
    tally.note("timed out", 5)
    assert len(lines) == 1
    clock.now += 10
    tally.note("timed out")
    assert len(lines) == 2
    assert lines[1].startswith("refused connections: 1006 in the last 11.0 s")
    assert "1000 wrong secret; 6 timed out" in lines[1]


def test_flush_reports_what_is_left_and_nothing_twice():
    lines: list[str] = []
    clock = Clock()
    tally = Tally(lines.append, "x", clock=clock)
    tally.flush()
    assert lines == []
    tally.note("a")
    tally.note("b")
    tally.flush()
    tally.flush()
    assert lines == ["x: 1 (1 a)", "x: 1 (1 b)"]
    assert tally.total == 2


@given(st.lists(st.tuples(st.floats(0, 5), st.sampled_from("abc")), max_size=300))
def test_every_event_is_counted_once_and_lines_are_bounded_by_time(events):
    lines: list[str] = []
    clock = Clock()
    tally = Tally(lines.append, "x", interval=10, clock=clock)
    start = clock.now
    for step, reason in events:
        clock.now += step
        tally.note(reason)
    tally.flush()
    counted = sum(int(line.split(": ", 1)[1].split(" ", 1)[0]) for line in lines)
    assert counted == len(events) == tally.total
    assert len(lines) <= (clock.now - start) / 10 + 2
