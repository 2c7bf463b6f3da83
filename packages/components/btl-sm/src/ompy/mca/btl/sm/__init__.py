"""The ``sm`` btl component: shared memory between the processes of one node."""

__version__ = "0.1.0"

from .component import SmBtlComponent  # after __version__: component.py imports it
from .module import SmBtlModule, SmEndpoint

__all__ = ["SmBtlComponent", "SmBtlModule", "SmEndpoint", "__version__"]
