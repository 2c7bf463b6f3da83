"""The modex state of one job: committed key-value data per rank, and fence bookkeeping.

Pure bookkeeping without sockets or threads, so the control server (many ranks) and a
singleton's in-process modex (one rank) follow exactly the same rules:

* ``commit(rank, data)`` publishes that rank's staged puts; a key committed again is replaced.
* ``lookup(rank, key)`` returns what ``rank`` has committed under ``key`` so far, and raises
  :class:`ModexKeyError` naming both if it has not.  It never waits: data committed by another
  rank is guaranteed visible after a fence that both ranks entered after the commit; before
  that, asking for it is a race that the caller loses with a clear error instead of a hang.
* Fences are counted in generations.  Generation ``g`` completes when every rank has entered
  it; then ``generation`` becomes ``g + 1``.  A rank can only enter the current generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import FenceError, ModexKeyError, RequestError


class ModexStore:
    """Committed data and fence progress for a job of ``size`` ranks."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a job has at least one rank, got size {size}")
        self.size = size
        self.generation = 0
        self._data: list[dict[str, Any]] = [{} for _ in range(size)]
        self._entered: set[int] = set()

    def _check_rank(self, rank: int, what: str) -> None:
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < self.size:
            raise RequestError(f"{what} {rank!r} is not a rank of this job (size {self.size})")

    def commit(self, rank: int, data: Mapping[str, Any]) -> None:
        self._check_rank(rank, "committing rank")
        for key in data:
            if not isinstance(key, str):
                raise RequestError(f"modex keys are strings, rank {rank} committed {key!r}")
        self._data[rank].update(data)

    def lookup(self, rank: int, key: str) -> Any:
        self._check_rank(rank, "requested rank")
        try:
            return self._data[rank][key]
        except KeyError:
            raise ModexKeyError(rank, key) from None

    def keys(self, rank: int) -> list[str]:
        self._check_rank(rank, "requested rank")
        return sorted(self._data[rank])

    def enter_fence(self, rank: int, generation: int) -> bool:
        """Record that ``rank`` entered fence ``generation``; True if that completed it."""
        self._check_rank(rank, "fencing rank")
        if generation != self.generation:
            raise FenceError(
                f"rank {rank} entered fence {generation}, but the job is at fence "
                f"{self.generation}: every rank must call fence the same number of times"
            )
        if rank in self._entered:
            raise FenceError(f"rank {rank} entered fence {generation} twice")
        self._entered.add(rank)
        if len(self._entered) < self.size:
            return False
        self._entered.clear()
        self.generation += 1
        return True

    @property
    def entered(self) -> frozenset[int]:
        """Ranks waiting in the current fence."""
        return frozenset(self._entered)
