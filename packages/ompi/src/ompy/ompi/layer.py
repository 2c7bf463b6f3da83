"""The ompi layer's self-description, published in the ``ompy.layers`` entry-point group."""

from __future__ import annotations

from ompy.opal.layer import Layer

from . import __version__

layer = Layer(
    "ompi",
    "ompy-ompi",
    __version__,
    "MPI layer: from ompy import MPI, communicators, datatypes, point-to-point, collectives",
)
