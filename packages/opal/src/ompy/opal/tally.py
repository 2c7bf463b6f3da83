"""Aggregated, rate-limited warnings: a flood of events becomes one line now and then.

A local process can make a listener refuse thousands of connections a second, or make
``accept`` fail again and again when descriptors run out.  Logging each occurrence would turn
that into a second denial of service (one run printed 433,708 lines in four seconds), so
repeated events are counted by reason and reported as one summary at most every ``interval``
seconds: the first event of a quiet period is reported at once, later ones wait for the next
summary.  :meth:`Tally.flush` reports what is still counted (call it when the owner closes).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

#: Seconds between two summaries of one tally.
DEFAULT_INTERVAL = 10.0


class Tally:
    """Counts events by reason and logs them at most once per ``interval`` seconds."""

    def __init__(
        self,
        log: logging.Logger | Callable[[str], None],
        what: str,
        *,
        interval: float = DEFAULT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._emit = log.warning if isinstance(log, logging.Logger) else log
        self.what = what
        self.interval = interval
        self._clock = clock
        self._counts: Counter[str] = Counter()
        self._since = 0.0
        self._next = 0.0
        #: Every event ever noted, for tests and diagnostics.
        self.total = 0
        #: How many summaries were emitted.
        self.reports = 0

    def note(self, reason: str, count: int = 1) -> None:
        """Count ``count`` events for ``reason``; report if the interval has passed."""
        now = self._clock()
        if not self._counts:
            self._since = now
        self._counts[reason] += count
        self.total += count
        if now >= self._next:
            self._report(now)

    def flush(self) -> None:
        """Report whatever was counted since the last summary (nothing if nothing was)."""
        if self._counts:
            self._report(self._clock())

    def _report(self, now: float) -> None:
        counts, self._counts = self._counts, Counter()
        total = sum(counts.values())
        reasons = "; ".join(f"{n} {reason}" for reason, n in counts.most_common())
        span = now - self._since
        when = f" in the last {span:.1f} s" if span >= 0.05 else ""
        self._emit(f"{self.what}: {total}{when} ({reasons})")
        self.reports += 1
        self._next = now + self.interval
