"""The ``default`` iof component: line-buffered forwarding of the ranks' stdio."""

__version__ = "0.1.0"

from .component import DefaultIofComponent  # after __version__: component.py imports it

__all__ = ["DefaultIofComponent", "__version__"]
