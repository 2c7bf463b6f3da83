"""The installed entry points of ompy's groups, remembered across processes.

Components, frameworks, layers, ``ompy`` subcommands and preload hooks are all found through
entry points.  Listing them through :mod:`importlib.metadata` (or stevedore, which calls it)
means importing that machinery first: ``importlib.metadata`` with ``email``, ``zipfile``,
``csv`` and ``hashlib``, about an eighth of the CPU a fork server spends preloading a rank's
modules, paid again by the launcher.  What it finds changes only when distributions are
installed or removed, so this module keeps the answer in a small cache file and reads it with
nothing but :mod:`os` and :mod:`json`.

**Staying right when distributions change.**  The cache file records, for every ``sys.path``
entry, the names of its ``*.dist-info``/``*.egg-info`` directories and the modification time
of each one's ``entry_points.txt`` (:func:`signature`).  Installing or removing a
distribution adds or removes a metadata directory; rewriting one in place changes its
``entry_points.txt``.  Every process compares these once (a directory scan per entry and a
``stat`` per distribution, about a millisecond) before trusting the file, so ``pip install``
of a component is seen by the next process at once.  A time within :data:`RACY_SECONDS` of
the scan is not trusted to be final (a change in the same clock tick would not move it): such
a listing is used but not saved.

**What is kept.**  One file per interpreter and set of metadata directories (directories on
``sys.path`` without distributions, such as a program's, do not make another one), under
``$XDG_CACHE_HOME/ompy`` (default ``~/.cache/ompy``); a group is listed
from the metadata the first time a process asks for it and added to the file.  A cache that
cannot be read or written is simply not used: the listing is then made from the metadata, as
it always could be.  Within one process the listing validated at the first call is kept for
the process's life (as stevedore keeps its own), and inherited by processes forked from it: a
fork server validates once and its ranks, whose ``sys.path`` gains the program's directory,
list nothing again.  :func:`forget` drops it, for tests that install distributions into a
running interpreter.

Loading an entry point imports its module and follows its attribute path, as
``importlib.metadata.EntryPoint.load`` does.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import threading
import time
import zlib
from collections.abc import Sequence
from typing import Any

import attrs

#: Bump when the file's layout changes; files of another format are rebuilt.
FORMAT = 2

#: A metadata time this close to the scan may still change within the same clock tick.
RACY_SECONDS = 2.0

_METADATA_SUFFIXES = (".dist-info", ".egg-info")


@attrs.frozen
class EntryPoint:
    """One installed entry point: ``name = value`` in ``group``."""

    name: str
    value: str
    group: str

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    @property
    def attr(self) -> str:
        """The attribute path after the colon (extras in brackets left out), or ``''``."""
        return self.value.partition(":")[2].partition("[")[0].strip()

    def load(self) -> Any:
        """Import the module and follow the attribute path; errors propagate unchanged."""
        target: Any = importlib.import_module(self.module)
        for part in filter(None, self.attr.split(".")):
            target = getattr(target, part)
        return target


@attrs.define
class _Listing:
    """What one process knows for one ``sys.path``: the evidence and the groups listed."""

    signature: tuple[tuple[str, int], ...]
    groups: dict[str, tuple[tuple[str, str], ...]]
    savable: bool


# This process's validated listing, keyed by the sys.path it was validated for: installed
# metadata is process-wide, like sys.modules (stevedore keeps the same per-process memo in
# ExtensionManager.ENTRY_POINT_CACHE).  At most one entry.
_listings: dict[tuple[str, ...], _Listing] = {}


def entry_points(group: str) -> list[EntryPoint]:
    """The installed entry points of ``group``, each ``(name, value)`` once, in metadata order."""
    if _listings:
        [listing] = _listings.values()
    else:
        path = tuple(sys.path)
        listing = _listings[path] = _validated(path)
    found = listing.groups.get(group)
    if found is None:
        found = _from_metadata(group)
        listing.groups[group] = found
        if listing.savable:
            _save(listing)
    return [EntryPoint(name, value, group) for name, value in found]


def forget() -> None:
    """Drop this process's listing: the next call checks the installed metadata again."""
    _listings.clear()


def cache_file(path: Sequence[str]) -> str:
    """Where the listing for this interpreter and the distributions on ``path`` is kept."""
    return _file_for(signature(path))


def signature(path: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """What changes when a distribution on ``path`` is installed, removed or rewritten.

    For a directory: its metadata directories (``*.dist-info``, ``*.egg-info``, an egg's
    ``EGG-INFO``), each named by the path of its ``entry_points.txt`` with that file's
    modification time (``-1`` if it has none); not the directory's own time, which changes
    with every file a program writes there (the working directory of ``-c``, a script's
    directory), and nothing for a directory without metadata.  For a file on the path (a zip
    archive): its own time.  A missing entry gives nothing: if it appears with distributions
    in it, their metadata is new evidence.
    """
    evidence: list[tuple[str, int]] = []
    for entry in path:
        where = entry or "."
        try:
            with os.scandir(where) as items:
                names = sorted(
                    item.name for item in items if item.name.lower().endswith(_METADATA_SUFFIXES)
                )
        except NotADirectoryError:  # a zip archive (or an egg file)
            evidence.append((entry, _mtime_ns(where)))
            continue
        except OSError:  # missing or unreadable: no distribution is found there either
            continue
        if where.lower().endswith(".egg"):
            names.append("EGG-INFO")
        for name in names:
            file = os.path.join(where, name, "entry_points.txt")
            evidence.append((file, _mtime_ns(file)))
    return tuple(evidence)


def _file_for(evidence: tuple[tuple[str, int], ...]) -> str:
    """One file per interpreter and set of metadata directories: directories without
    distributions (a program's, an editable install's sources) do not make another one."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = "\0".join([sys.executable, sys.prefix, sys.version, *(name for name, _ in evidence)])
    return os.path.join(base, "ompy", f"entry-points-{zlib.crc32(key.encode()):08x}")


def _mtime_ns(name: str) -> int:
    try:
        return os.stat(name).st_mtime_ns
    except OSError:
        return -1


def _validated(path: tuple[str, ...]) -> _Listing:
    """The cached listing if its evidence still holds, else an empty one to fill."""
    now = signature(path)
    racy = time.time_ns() - int(RACY_SECONDS * 1e9)
    savable = all(mtime < racy for _name, mtime in now)
    stored = _load(now)
    if stored is not None:
        return _Listing(now, stored, savable)
    return _Listing(now, {}, savable)


def _load(
    evidence: tuple[tuple[str, int], ...],
) -> dict[str, tuple[tuple[str, str], ...]] | None:
    """The stored groups if the file was written against ``evidence``; ``None`` for a
    missing, stale, damaged or foreign file."""
    try:
        with open(_file_for(evidence), encoding="utf-8") as file:
            data = json.load(file)
        if data["format"] != FORMAT:
            return None
        if tuple((str(name), int(mtime)) for name, mtime in data["signature"]) != evidence:
            return None  # something was installed, removed or rewritten since
        return {
            str(group): tuple((str(name), str(value)) for name, value in found)
            for group, found in data["groups"].items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _save(listing: _Listing) -> None:
    """Write the file atomically (a reader sees the old or the new one, never a part)."""
    target = _file_for(listing.signature)
    # Unique per thread; the groups copied at once (another thread may be adding one).
    temporary = f"{target}.{os.getpid()}-{threading.get_ident()}.tmp"
    data = {"format": FORMAT, "signature": listing.signature, "groups": dict(listing.groups)}
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(temporary, "w", encoding="utf-8") as file:
            json.dump(data, file)
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _from_metadata(group: str) -> tuple[tuple[str, str], ...]:
    """List ``group`` from the installed metadata (the slow path this module caches)."""
    from importlib.metadata import entry_points as installed

    seen: dict[tuple[str, str], None] = {}
    for found in installed(group=group):
        seen.setdefault((found.name, found.value), None)
    return tuple(seen)
