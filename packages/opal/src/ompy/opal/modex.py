"""The module exchange (modex): how transports publish contact information and find their peers'.

A transport ``put``s what peers need to reach it (a TCP address and port, a shared-memory segment
name) under a key, the process ``commit``s, every process of the job meets in ``fence``, and then
anyone can ``get(rank, key)`` any peer's value.  Values are opaque ``bytes``: each transport owns
its encoding, and nothing on this path is pickled.

:class:`Modex` is a structural protocol: the run-time's key-value client (in ompy-orte) satisfies it
by having these four methods, so opal never imports the run-time.  Two implementations live here:

- :class:`InMemoryModex`, for a singleton job and for tests that run several "ranks" in one process;
- :class:`DirectoryModex`, for tests that run ranks as separate processes on one machine without a
  run-time: each rank writes its committed values into a shared directory.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Protocol, runtime_checkable


class ModexError(RuntimeError):
    """A modex operation failed: a missing key, an unknown rank or a fence that timed out."""


@runtime_checkable
class Modex(Protocol):
    """The four operations of a modex, as the run-time's client provides them."""

    def put(self, key: str, value: bytes) -> None:
        """Stage ``value`` under ``key`` for this process (visible to others after a fence)."""

    def commit(self) -> None:
        """Publish everything staged since the last commit."""

    def fence(self) -> None:
        """Wait until every process of the job has committed (collective over the job)."""

    def get(self, rank: int, key: str) -> bytes:
        """The value that ``rank`` published under ``key``; :class:`ModexError` if none."""


def _check_put(key: str, value: bytes) -> None:
    if not isinstance(key, str) or not key:
        raise ModexError(f"modex keys are non-empty strings, got {key!r}")
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise ModexError(
            f"modex values are bytes (each transport encodes its own), got "
            f"{type(value).__name__} for key {key!r}"
        )


class InMemoryModex:
    """A modex whose ranks live in one process and share one dictionary.

    ``InMemoryModex(rank=0)`` is a singleton's modex; ``InMemoryModex.group(n)`` gives ``n``
    modexes sharing a store, one per simulated rank.  ``fence`` has nothing to wait for.
    """

    def __init__(self, rank: int = 0, store: dict[int, dict[str, bytes]] | None = None) -> None:
        self.rank = rank
        self._store = {} if store is None else store
        self._staged: dict[str, bytes] = {}

    @classmethod
    def group(cls, size: int) -> list[InMemoryModex]:
        store: dict[int, dict[str, bytes]] = {}
        return [cls(rank, store) for rank in range(size)]

    def put(self, key: str, value: bytes) -> None:
        _check_put(key, value)
        self._staged[key] = bytes(value)

    def commit(self) -> None:
        self._store.setdefault(self.rank, {}).update(self._staged)
        self._staged.clear()

    def fence(self) -> None:
        self.commit()

    def get(self, rank: int, key: str) -> bytes:
        try:
            return self._store[rank][key]
        except KeyError:
            raise ModexError(f"rank {rank} published nothing under the modex key {key!r}") from None


class DirectoryModex:
    """A modex for ``size`` processes on one machine that share ``directory``.

    ``commit`` writes this rank's values atomically to ``rank-<n>.json`` (values hex-encoded);
    ``fence`` waits, polling, until every rank's file exists, or raises after ``timeout`` seconds.
    Meant for tests and tools that start processes without the run-time.
    """

    def __init__(
        self, directory: str | os.PathLike[str], rank: int, size: int, *, timeout: float = 30.0
    ) -> None:
        if not 0 <= rank < size:
            raise ModexError(f"rank {rank} is outside a job of size {size}")
        self.directory = Path(directory)
        self.rank, self.size, self.timeout = rank, size, timeout
        self._staged: dict[str, bytes] = {}
        self._published: dict[str, bytes] = {}
        self._cache: dict[int, dict[str, bytes]] = {}

    def put(self, key: str, value: bytes) -> None:
        _check_put(key, value)
        self._staged[key] = bytes(value)

    def commit(self) -> None:
        self._published.update(self._staged)
        self._staged.clear()
        final = self._path(self.rank)
        temporary = final.with_suffix(f".tmp{os.getpid()}")
        temporary.write_text(json.dumps({k: v.hex() for k, v in self._published.items()}))
        os.replace(temporary, final)

    def fence(self) -> None:
        self.commit()
        deadline = time.monotonic() + self.timeout
        missing = list(range(self.size))
        while missing:
            missing = [rank for rank in missing if not self._path(rank).exists()]
            if not missing:
                break
            if time.monotonic() > deadline:
                raise ModexError(
                    f"modex fence timed out after {self.timeout:g} s in {self.directory}: "
                    f"ranks {missing} never committed"
                )
            time.sleep(0.005)
        self._cache.clear()

    def get(self, rank: int, key: str) -> bytes:
        if not 0 <= rank < self.size:
            raise ModexError(f"rank {rank} is outside a job of size {self.size}")
        values = self._cache.get(rank)
        if values is None:
            try:
                raw = json.loads(self._path(rank).read_text())
            except FileNotFoundError:
                raise ModexError(
                    f"rank {rank} has not committed to the modex in {self.directory} "
                    f"(call fence() first)"
                ) from None
            values = self._cache[rank] = {k: bytes.fromhex(v) for k, v in raw.items()}
        try:
            return values[key]
        except KeyError:
            raise ModexError(f"rank {rank} published nothing under the modex key {key!r}") from None

    def _path(self, rank: int) -> Path:
        return self.directory / f"rank-{rank}.json"
