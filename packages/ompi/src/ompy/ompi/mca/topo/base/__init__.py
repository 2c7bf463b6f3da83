"""Glue of the topo framework: grid and graph bookkeeping, and the placement component.

The API (:mod:`ompy.ompi.api.topocomm`) builds topologies with :mod:`.cartesian`,
:mod:`.graph` and :mod:`.distgraph`, and asks ``comm.instance.topo``
(:class:`.select.TopoSelection`) to place the processes when the program allows reordering.
"""

from __future__ import annotations

from .select import TopoSelection, checked_placement, identity

__all__ = ["TopoSelection", "checked_placement", "identity"]
