"""The ``sm`` btl component: shared memory between the processes of one node."""

__version__ = "0.1.0"

from .component import SmComponent  # after __version__: component.py imports it
from .module import SmEndpoint, SmModule

__all__ = ["SmComponent", "SmEndpoint", "SmModule", "__version__"]
