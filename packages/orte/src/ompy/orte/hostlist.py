"""Slurm's compact notations for node lists and per-node counts, expanded.

Slurm hands a job its nodes as a *hostlist*: ``n[1-3,7],gpu[01-02]-a,login`` names ``n1 n2 n3
n7 gpu01-a gpu02-a login``.  Commas outside brackets separate entries; an entry may carry
several bracket groups (``r[1-2]n[1-2]`` is ``r1n1 r1n2 r2n1 r2n2``, the last group varying
fastest); a range keeps the zero padding of its lower bound (``[08-10]`` is ``08 09 10``).
Per-node counts come run-length encoded: ``2(x3),1`` is ``2 2 2 1``.  Both are needed by
whatever reads an allocation (ras slurm) or a step's layout (ess pmi), so they live here once.

Malformed text raises :class:`HostlistError` (a ``ValueError``) quoting the text and what is
wrong with it: an allocation read wrongly would start ranks on the wrong nodes.
"""

from __future__ import annotations

import itertools
import re

__all__ = ["HostlistError", "expand_counts", "expand_hostlist"]

_RANGE = re.compile(r"(\d+)(?:-(\d+))?")
_COUNT = re.compile(r"(\d+)(?:\(x(\d+)\))?")
#: Upper bound on the names one hostlist may expand to (a typo like ``[1-999999999]`` must fail
#: quickly instead of exhausting memory).
MAX_HOSTS = 1_000_000


class HostlistError(ValueError):
    """A hostlist or count list that cannot be expanded."""


def _split_top_level(text: str) -> list[str]:
    """Split at the commas that are not inside brackets, checking bracket balance."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "[":
            if depth:
                raise HostlistError(f"hostlist {text!r}: nested '[' at offset {index}")
            depth = 1
        elif char == "]":
            if not depth:
                raise HostlistError(f"hostlist {text!r}: ']' without '[' at offset {index}")
            depth = 0
        elif char == "," and not depth:
            parts.append(text[start:index])
            start = index + 1
    if depth:
        raise HostlistError(f"hostlist {text!r}: '[' is never closed")
    parts.append(text[start:])
    return parts


def _range_values(text: str, group: str) -> list[str]:
    """``"01-03,7"`` -> ``["01", "02", "03", "7"]``."""
    values: list[str] = []
    for item in group.split(","):
        match = _RANGE.fullmatch(item.strip())
        if match is None:
            raise HostlistError(f"hostlist {text!r}: {item!r} is not a number or a range a-b")
        low_text, high_text = match.group(1), match.group(2)
        low = int(low_text)
        high = low if high_text is None else int(high_text)
        if high < low:
            raise HostlistError(f"hostlist {text!r}: the range {item!r} runs backwards")
        if len(values) + high - low + 1 > MAX_HOSTS:
            raise HostlistError(f"hostlist {text!r} names more than {MAX_HOSTS} hosts")
        width = len(low_text)
        values.extend(str(value).zfill(width) for value in range(low, high + 1))
    return values


def _expand_entry(text: str, entry: str) -> list[str]:
    pieces: list[list[str]] = []
    rest = entry
    while rest:
        open_at = rest.find("[")
        if open_at < 0:
            pieces.append([rest])
            break
        close_at = rest.index("]", open_at)  # balance was checked by _split_top_level
        if open_at:
            pieces.append([rest[:open_at]])
        pieces.append(_range_values(text, rest[open_at + 1 : close_at]))
        rest = rest[close_at + 1 :]
    total = 1
    for choices in pieces:
        total *= len(choices)
    if total > MAX_HOSTS:
        raise HostlistError(f"hostlist {text!r} names more than {MAX_HOSTS} hosts")
    return ["".join(combo) for combo in itertools.product(*pieces)]


def expand_hostlist(text: str) -> list[str]:
    """Every host name of a Slurm hostlist, in order (duplicates kept, as Slurm keeps them)."""
    if not isinstance(text, str):
        raise TypeError(f"a hostlist is a str, got {type(text).__name__}")
    stripped = text.strip()
    if not stripped:
        raise HostlistError("the hostlist is empty")
    hosts: list[str] = []
    for raw in _split_top_level(stripped):
        entry = raw.strip()
        if not entry:
            raise HostlistError(f"hostlist {text!r} has an empty entry")
        if any(char.isspace() for char in entry):
            raise HostlistError(f"hostlist {text!r}: {entry!r} contains white space")
        hosts.extend(_expand_entry(text, entry))
        if len(hosts) > MAX_HOSTS:
            raise HostlistError(f"hostlist {text!r} names more than {MAX_HOSTS} hosts")
    return hosts


def expand_counts(text: str) -> list[int]:
    """A Slurm count list (``SLURM_TASKS_PER_NODE``): ``"2(x3),1"`` -> ``[2, 2, 2, 1]``."""
    if not isinstance(text, str):
        raise TypeError(f"a count list is a str, got {type(text).__name__}")
    counts: list[int] = []
    if not text.strip():
        raise HostlistError("the count list is empty")
    for item in text.split(","):
        match = _COUNT.fullmatch(item.strip())
        if match is None:
            raise HostlistError(f"count list {text!r}: {item!r} is not 'N' or 'N(xM)'")
        repeat = 1 if match.group(2) is None else int(match.group(2))
        if repeat < 1:
            raise HostlistError(f"count list {text!r}: {item!r} repeats zero times")
        if len(counts) + repeat > MAX_HOSTS:
            raise HostlistError(f"count list {text!r} covers more than {MAX_HOSTS} nodes")
        counts.extend([int(match.group(1))] * repeat)
    return counts
