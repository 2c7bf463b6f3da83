"""Glue of the bml framework: selecting the process's BML module and bandwidth weights."""

from __future__ import annotations

from .select import SelectedBml, select_bml
from .weights import assign_weights

__all__ = ["SelectedBml", "assign_weights", "select_bml"]
