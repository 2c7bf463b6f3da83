"""The ``ob1`` pml component: MPI matching and messaging protocols over BTL transports."""

__version__ = "0.1.0"

from .component import Ob1PmlComponent  # after __version__: component.py imports it
from .module import Ob1PmlModule, PmlError

__all__ = ["Ob1PmlComponent", "Ob1PmlModule", "PmlError", "__version__"]
