"""The orte layer's self-description, published in the ``ompy.layers`` entry-point group."""

from __future__ import annotations

from ompy.opal.layer import Layer

from . import __version__

layer = Layer(
    "orte",
    "ompy-orte",
    __version__,
    "run-time layer: ompy run, launch, stdio forwarding, modex, error management",
)
