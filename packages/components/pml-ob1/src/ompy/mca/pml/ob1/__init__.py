"""The ``ob1`` pml component: MPI matching and messaging protocols over BTL transports."""

__version__ = "0.1.0"

from .component import Ob1Component  # after __version__: component.py imports it
from .module import Ob1Module, PmlError

__all__ = ["Ob1Component", "Ob1Module", "PmlError", "__version__"]
