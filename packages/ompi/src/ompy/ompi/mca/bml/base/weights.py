"""Bandwidth weights: how long messages are shared among the modules that reach one peer."""

from __future__ import annotations

from collections.abc import Sequence

from ..interface import BmlBtl


def assign_weights(btls: Sequence[BmlBtl]) -> None:
    """Set each ``weight`` to its module's share of the total bandwidth (they sum to 1).

    Modules that declare no bandwidth (0) share equally, as Open MPI's r2 does, so a
    misconfigured ``btl_<name>_bandwidth`` never starves a module completely.
    """
    if not btls:
        return
    total = sum(btl.bandwidth for btl in btls)
    if total <= 0:
        for btl in btls:
            btl.weight = 1.0 / len(btls)
        return
    for btl in btls:
        btl.weight = btl.bandwidth / total
