"""The ``tcp`` btl component: fragments over TCP sockets, one module per network interface."""

__version__ = "0.1.0"

from .component import TcpComponent  # after __version__: component.py imports it
from .module import TcpEndpoint, TcpModule

__all__ = ["TcpComponent", "TcpEndpoint", "TcpModule", "__version__"]
