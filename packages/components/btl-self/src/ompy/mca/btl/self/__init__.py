"""The ``self`` btl component: loopback to the calling process."""

__version__ = "0.1.0"

from .component import SelfBtlComponent, SelfBtlModule  # after __version__: component.py imports it

__all__ = ["SelfBtlComponent", "SelfBtlModule", "__version__"]
