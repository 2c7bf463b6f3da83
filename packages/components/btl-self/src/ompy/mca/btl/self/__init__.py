"""The ``self`` btl component: loopback to the calling process."""

__version__ = "0.1.0"

from .component import SelfComponent, SelfModule  # after __version__: component.py imports it

__all__ = ["SelfComponent", "SelfModule", "__version__"]
