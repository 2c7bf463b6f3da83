"""The ``tcp`` btl component: fragments over TCP sockets, one module per network interface."""

__version__ = "0.1.0"

from .component import TcpBtlComponent  # after __version__: component.py imports it
from .module import TcpBtlModule, TcpEndpoint

__all__ = ["TcpBtlComponent", "TcpBtlModule", "TcpEndpoint", "__version__"]
