"""The opal layer's self-description, published in the ``ompy.layers`` entry-point group."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from . import __version__
from .mca.params import Registry


def _no_params(_registry: Registry) -> None:
    """A layer without layer-wide parameters registers nothing."""


@attrs.frozen
class Layer:
    """One installed layer: its name, distribution and release, and its layer-wide parameters.

    Each layer publishes one of these so that ``ompy info`` and ``ompy --version`` can list what
    is installed without knowing in advance which layers exist.
    """

    name: str
    distribution: str
    version: str
    description: str
    register_params: Callable[[Registry], None] = _no_params

    ENTRY_POINT_GROUP = "ompy.layers"


def _register_params(registry: Registry) -> None:
    from .datatype.arch import register_params as register_arch_params
    from .progress import register_params as register_progress_params

    register_progress_params(registry)
    register_arch_params(registry)


layer = Layer(
    "opal",
    "ompy-opal",
    __version__,
    "portability layer: MCA core, parameters, shared memory, byte transfer interface",
    register_params=_register_params,
)


def installed_layers() -> list[Layer]:
    """Every installed layer, bottom first."""
    from .mca.entry_points import entry_points

    order = {"opal": 0, "orte": 1, "ompi": 2}
    layers: list[Layer] = []
    for entry_point in entry_points(Layer.ENTRY_POINT_GROUP):
        try:
            layers.append(entry_point.load())
        except Exception:  # as stevedore did: a layer that cannot load is left out here
            continue  # (``ompy info`` shows why)
    return sorted(layers, key=lambda layer: order.get(layer.name, 9))
