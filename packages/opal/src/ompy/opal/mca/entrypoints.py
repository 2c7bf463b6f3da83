"""Entry points read straight from installed metadata, without importing importlib.metadata.

Every ompy process lists entry points on its way up: the launcher for its subcommand and for
ras, plm, errmgr and iof, every rank for ess, pml, bml, btl, coll, op and more.  Importing
stevedore and importlib.metadata (which pull in email, zipfile, csv, json and hashlib) costs
more than the listing itself, 50-80 ms per process on the project's 2-core machines, and every
rank of a job paid it again.  This module reads the same files importlib.metadata reads and
imports a target only when asked, so a process that opens frameworks pays only for the files.

What it reads (importlib.metadata's rules, so both always agree):

* every directory on ``sys.path`` (``''`` is the working directory), in order;
* in each, the ``<name>-<version>.dist-info`` and ``.egg-info`` directories; a distribution
  name (normalized: case, ``-``, ``_`` and ``.`` do not matter) seen earlier on the path hides
  later ones, exactly as an installed package shadows another copy further down;
* their ``entry_points.txt``: ``[group]`` sections of ``name = module:attr`` lines.

A path entry that is not a directory (a zip file) is left to importlib.metadata itself,
imported only then.  A directory's listing is cached under its modification time, the rule
stevedore's cache uses, so installing or removing a package is seen at once; a directory
modified within the last :data:`_RACY_SECONDS` is read again on every call, because the
kernel's coarse timestamps cannot tell two changes in the same few milliseconds apart.
"""

from __future__ import annotations

import functools
import importlib
import os
import re
import sys
import time

import attrs

_METADATA_SUFFIXES = (".dist-info", ".egg-info")
_RACY_SECONDS = 2.0
_TARGET = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


@attrs.frozen
class EntryPoint:
    """One ``name = target`` line of a distribution's ``entry_points.txt``."""

    name: str
    #: ``module`` or ``module:attribute.path``, as written in the metadata.
    value: str
    group: str
    #: The normalized name of the distribution that declares it.
    distribution: str

    def load(self) -> object:
        """Import the target's module and return the named object (what stevedore loads)."""
        return load_target(self.value)


def load_target(value: str) -> object:
    """Import ``module[:attribute.path]`` and return that object; errors propagate as raised."""
    match = _TARGET.match(value)
    if match is None:
        raise ValueError(
            f"the entry point target {value!r} is not of the form 'module' or 'module:attribute'"
        )
    module = importlib.import_module(match.group("module"))
    attributes = filter(None, (match.group("attr") or "").split("."))
    return functools.reduce(getattr, attributes, module)


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group`` of every visible distribution, in ``sys.path`` order."""
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in list(sys.path):
        for distribution, groups in _distributions_in(entry):
            if distribution in seen:
                continue
            seen.add(distribution)
            for name, value in groups.get(group, ()):
                found.append(EntryPoint(name, value, group, distribution))
    return found


# -- reading one sys.path entry -------------------------------------------------------------------

_Groups = dict[str, list[tuple[str, str]]]
_cache: dict[str, tuple[int, list[tuple[str, _Groups]]]] = {}


def _distributions_in(entry: str) -> list[tuple[str, _Groups]]:
    """``(normalized name, entry points by group)`` of each distribution in one path entry."""
    directory = entry or os.getcwd()
    try:
        status = os.stat(directory)
    except OSError:
        return []
    if not os.path.isdir(directory):
        return _distributions_elsewhere(entry)
    cached = _cache.get(directory)
    if cached is not None and cached[0] == status.st_mtime_ns:
        return cached[1]
    distributions = _scan(directory)
    if time.time() - status.st_mtime > _RACY_SECONDS:
        _cache[directory] = (status.st_mtime_ns, distributions)
    else:
        _cache.pop(directory, None)
    return distributions


def _scan(directory: str) -> list[tuple[str, _Groups]]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    distributions = []
    for child in names:
        stem, ext = os.path.splitext(child)
        if ext.lower() not in _METADATA_SUFFIXES:
            continue
        distribution = _normalize(stem.partition("-")[0])
        try:
            with open(os.path.join(directory, child, "entry_points.txt"), encoding="utf-8") as f:
                text = f.read()
        except OSError:  # no entry points (or not a directory): the name is still taken
            text = ""
        distributions.append((distribution, parse(text)))
    return distributions


def _distributions_elsewhere(entry: str) -> list[tuple[str, _Groups]]:
    """Distributions inside a zip file or similar path entry, through importlib.metadata."""
    import importlib.metadata

    distributions = []
    for dist in importlib.metadata.distributions(path=[entry]):
        groups: _Groups = {}
        for ep in dist.entry_points:
            groups.setdefault(ep.group, []).append((ep.name, ep.value))
        distributions.append((_normalize(dist.metadata["Name"] or ""), groups))
    return distributions


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def parse(text: str) -> _Groups:
    """``entry_points.txt`` as ``{group: [(name, target), ...]}`` (importlib.metadata's reading).

    Blank lines and ``#`` comments are skipped; lines before the first ``[group]`` and lines
    without ``=`` belong to no entry point and are ignored.
    """
    groups: _Groups = {}
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        name, sep, value = line.partition("=")
        if section is None or not sep:
            continue
        groups.setdefault(section, []).append((name.strip(), value.strip()))
    return groups
