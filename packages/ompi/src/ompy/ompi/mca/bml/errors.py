"""Errors of the BTL management layer."""

from __future__ import annotations


class BmlError(RuntimeError):
    """The BML cannot do what was asked (no transport at all, a peer added twice)."""


class BmlUnreachableError(BmlError):
    """No selected BTL module reaches a peer: the processes cannot talk to each other."""
