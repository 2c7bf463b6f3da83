"""The ``r2`` bml component: per-peer BTL endpoint tables (exclusivity, latency, bandwidth)."""

__version__ = "0.1.0"

from .component import R2BmlComponent, R2BmlModule  # after __version__: component.py imports it

__all__ = ["R2BmlComponent", "R2BmlModule", "__version__"]
