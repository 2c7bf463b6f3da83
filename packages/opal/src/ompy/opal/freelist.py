"""Free lists: pools of reusable objects (descriptors, buffers) that grow on demand, up to a bound.

Allocating a descriptor and its buffer for every message would put the allocator and the
zero-filling of fresh memory on the hot path; a free list hands back an object that was used
before.  Like Open MPI's ``opal_free_list_t`` it starts with ``initial`` objects, grows by
``increment`` when empty, and stops at ``maximum`` (``None``: unbounded): then :meth:`get` returns
``None`` and the caller queues its work until something is returned with :meth:`put`.

Items are handed out last-in first-out, so the most recently used (cache-warm) one comes back
first.  ``get`` and ``put`` are single list operations, atomic under the interpreter lock; growth
takes a lock, so a pool may be shared between threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class FreeListExhaustedError(RuntimeError):
    """Raised by :meth:`FreeList.take` when the pool is at its maximum and empty."""


class FreeList(Generic[T]):
    """A bounded, growable LIFO pool of objects made by ``factory``."""

    def __init__(
        self,
        factory: Callable[[], T],
        *,
        initial: int = 0,
        increment: int = 8,
        maximum: int | None = None,
        name: str = "free list",
    ) -> None:
        if initial < 0:
            raise ValueError(f"{name}: initial size must be >= 0, got {initial}")
        if increment < 1:
            raise ValueError(f"{name}: increment must be >= 1, got {increment}")
        if maximum is not None and maximum < max(initial, 1):
            raise ValueError(
                f"{name}: maximum ({maximum}) must be at least 1 and at least the initial "
                f"size ({initial})"
            )
        self.name = name
        self._factory = factory
        self._increment = increment
        self._maximum = maximum
        self._items: list[T] = []
        self._allocated = 0
        self._grow_lock = threading.Lock()
        self._grow(initial)

    @property
    def allocated(self) -> int:
        """How many objects this pool has created in total."""
        return self._allocated

    @property
    def available(self) -> int:
        """How many objects are in the pool right now (not handed out)."""
        return len(self._items)

    @property
    def maximum(self) -> int | None:
        return self._maximum

    def get(self) -> T | None:
        """An object from the pool, growing it if needed; ``None`` when at the maximum."""
        try:
            return self._items.pop()
        except IndexError:
            pass
        with self._grow_lock:
            if not self._items:
                self._grow(self._increment)
        try:
            return self._items.pop()
        except IndexError:
            return None

    def take(self) -> T:
        """Like :meth:`get`, but an exhausted pool is an error instead of ``None``."""
        item = self.get()
        if item is None:
            raise FreeListExhaustedError(
                f"{self.name} is exhausted: all {self._allocated} objects are in use "
                f"(maximum {self._maximum}); return objects with put() or raise the maximum"
            )
        return item

    def put(self, item: T) -> None:
        """Return an object to the pool (it must have come from this pool)."""
        self._items.append(item)

    def _grow(self, count: int) -> None:
        if self._maximum is not None:
            count = min(count, self._maximum - self._allocated)
        factory = self._factory
        self._items.extend(factory() for _ in range(count))
        self._allocated += max(count, 0)

    def __repr__(self) -> str:
        return (
            f"<FreeList {self.name!r}: {self.available} available, "
            f"{self._allocated} allocated, maximum {self._maximum}>"
        )
