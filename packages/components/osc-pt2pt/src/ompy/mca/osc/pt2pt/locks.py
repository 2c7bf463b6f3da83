"""The target's window lock: shared or exclusive, granted first come, first served.

Requests wait in arrival order; a shared request behind a waiting exclusive one waits too,
so an exclusive locker is never starved by a stream of shared ones.
"""

from __future__ import annotations

import collections

from ompy.ompi.mca.osc import LOCK_EXCLUSIVE


class LockTable:
    """Who holds this process's window lock, and who waits for it."""

    def __init__(self) -> None:
        self.exclusive: int | None = None
        #: Holders of shared locks: origin rank -> how many (Lock_all and Lock may overlap).
        self.shared: collections.Counter[int] = collections.Counter()
        self.waiting: collections.deque[tuple[int, int, int]] = collections.deque()

    def _grantable(self, lock_type: int) -> bool:
        if lock_type == LOCK_EXCLUSIVE:
            return self.exclusive is None and not self.shared
        return self.exclusive is None

    def _grant_waiting(self) -> list[tuple[int, int]]:
        granted = []
        while self.waiting and self._grantable(self.waiting[0][2]):
            origin, ident, lock_type = self.waiting.popleft()
            self._take(origin, lock_type)
            granted.append((origin, ident))
        return granted

    def _take(self, origin: int, lock_type: int) -> None:
        if lock_type == LOCK_EXCLUSIVE:
            self.exclusive = origin
        else:
            self.shared[origin] += 1

    def request(self, origin: int, ident: int, lock_type: int) -> list[tuple[int, int]]:
        """``origin`` asks for the lock; the (origin, request id) pairs granted now."""
        self.waiting.append((origin, ident, lock_type))
        return self._grant_waiting()

    def release(self, origin: int) -> list[tuple[int, int]]:
        """``origin`` gives its lock back; the waiting requests granted now."""
        if self.exclusive == origin:
            self.exclusive = None
        elif self.shared[origin] > 0:
            self.shared[origin] -= 1
            if not self.shared[origin]:
                del self.shared[origin]
        else:
            raise ValueError(f"rank {origin} released a window lock it does not hold")
        return self._grant_waiting()
