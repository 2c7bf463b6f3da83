"""The ``pmi`` ess component: a rank started directly by a resource manager speaking PMI."""

__version__ = "0.1.0"

from .component import PmiEssComponent  # after __version__: component.py imports it

__all__ = ["PmiEssComponent", "__version__"]
