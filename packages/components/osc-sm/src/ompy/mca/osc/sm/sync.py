"""Active-target synchronisation through the window's control words: fence and PSCW.

Every counter has one writer and only grows (:mod:`.layout`), so a rank publishes an event with
one aligned 8-byte store and its peers notice it by reading that word; no read-modify-write is
ever shared.  Each rank remembers locally how many events of each kind it has sent and how many
it expects, so epochs may follow one another without resetting anything.

* **Fence**: a rank stores its fence count, then waits until every rank's count has reached
  it (a counter barrier; the data stores before it are ordered before the count's store).
* **Post/Start**: ``Post`` raises the post counter the target owns in each origin's block;
  ``Start`` only records which targets it will access.  An origin waits for a target's post
  before its first operation to that target (:meth:`Counters.await_post`), so ``Start`` never
  blocks and a program that posts after it starts cannot deadlock.
* **Complete/Wait**: ``Complete`` raises the complete counter the origin owns in each target's
  block; ``Wait`` (and ``Test``) compare those with the epochs the target expects.

Ordering: x86-64 keeps stores in order and loads in order, which is all that publishing a
counter after data needs.  Elsewhere (and for the store-load pairs) :func:`memory_barrier`
issues a full barrier: acquiring and releasing a lock executes the processor's atomic
instructions, which order memory on every architecture CPython runs on.

Waits go through the progress engine, so point-to-point traffic moves while a rank waits; a
wait longer than the engine's spin budget sleeps at most ``opal_progress_block_max_ms`` between
looks at the counters.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from .layout import FENCE, POST, Layout

_BARRIER = threading.Lock()


def memory_barrier() -> None:
    """A full memory barrier (the atomic instructions of a lock's acquire and release)."""
    with _BARRIER:
        pass


class Counters:
    """One rank's view of a window's control words and its local epoch bookkeeping.

    ``words`` is the control region as ``uint64`` (every rank's block, ``layout.stride`` words
    apart); ``engine`` the progress engine that waits run in.
    """

    def __init__(self, words: np.ndarray, layout: Layout, rank: int, engine: Any) -> None:
        self.words = words
        self.stride = layout.stride
        self.ranks = layout.ranks
        self.complete_base = layout.complete
        self.rank = rank
        self.engine = engine
        self._fences = 0
        self._fence_column = words[FENCE :: self.stride]
        n = layout.ranks
        #: Posts this rank made to each origin / completes it made to each target.
        self._posts_sent = [0] * n
        self._completes_sent = [0] * n
        #: Posts this rank expects from each target / completes from each origin.
        self._posts_expected = [0] * n
        self._completes_expected = [0] * n
        #: Targets of the current access epoch whose post has not been seen yet.
        self.unposted: set[int] = set()
        #: Origins of the current exposure epoch.
        self.exposed_to: tuple[int, ...] = ()

    # -- fence ----------------------------------------------------------------------------------

    def barrier(self) -> None:
        """Wait until every rank has reached this barrier (fence, window free)."""
        memory_barrier()
        self._fences += 1
        goal = self._fences
        self.words[self.rank * self.stride + FENCE] = goal
        column = self._fence_column
        if int(column.min()) < goal:
            self.engine.wait_until(lambda: int(column.min()) >= goal)
        memory_barrier()

    # -- PSCW -----------------------------------------------------------------------------------

    def post(self, origins: Sequence[int]) -> None:
        """Open an exposure epoch to ``origins``: tell each of them."""
        memory_barrier()
        me, stride, words = self.rank, self.stride, self.words
        for origin in origins:
            self._posts_sent[origin] += 1
            words[origin * stride + POST + me] = self._posts_sent[origin]
            self._completes_expected[origin] += 1
        self.exposed_to = tuple(origins)

    def start(self, targets: Sequence[int]) -> None:
        """Open an access epoch to ``targets`` (their posts are awaited lazily)."""
        for target in targets:
            self._posts_expected[target] += 1
        self.unposted = set(targets)

    def _posted(self, target: int) -> bool:
        word = self.rank * self.stride + POST + target
        return int(self.words[word]) >= self._posts_expected[target]

    def await_post(self, target: int) -> None:
        """Wait until ``target`` has posted the exposure epoch this access epoch matches."""
        if not self._posted(target):
            self.engine.wait_until(lambda: self._posted(target))
        self.unposted.discard(target)
        memory_barrier()

    def complete(self, targets: Sequence[int]) -> None:
        """Close the access epoch: every operation is done; tell each target."""
        memory_barrier()
        me, stride, words, base = self.rank, self.stride, self.words, self.complete_base
        for target in targets:
            self._completes_sent[target] += 1
            words[target * stride + base + me] = self._completes_sent[target]
        self.unposted = set()

    def _all_completed(self) -> bool:
        row = self.rank * self.stride + self.complete_base
        words, expected = self.words, self._completes_expected
        return all(int(words[row + origin]) >= expected[origin] for origin in self.exposed_to)

    def wait(self) -> None:
        """Close the exposure epoch once every origin of it has completed."""
        if not self._all_completed():
            self.engine.wait_until(self._all_completed)
        self.exposed_to = ()
        memory_barrier()

    def test(self) -> bool:
        """:meth:`wait` if every origin has completed; whether it did."""
        if not self._all_completed():
            return False
        self.exposed_to = ()
        memory_barrier()
        return True

    def close(self) -> None:
        """Drop the views of the segment (so that it can be unmapped)."""
        self._fence_column = None  # type: ignore[assignment]
        self.words = None  # type: ignore[assignment]
