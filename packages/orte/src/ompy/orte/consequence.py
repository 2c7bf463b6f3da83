"""Telling the launcher which failures are consequences of another rank's.

When one rank fails inside a collective, its peers learn it and raise too.  Every one of those
exceptions reaches the launcher, which reports the job's *first* failure: a peer's consequential
exception may arrive before the failing rank's own.  An exception class that mixes in
:class:`Consequential` says "I was raised only because another rank failed"; the runtime
reports it as such, and the launcher judges such reports after the others, so the report names
the rank that failed first.
"""

from __future__ import annotations


class Consequential:
    """Mixed into an exception raised because another rank failed first."""

    __slots__ = ()
