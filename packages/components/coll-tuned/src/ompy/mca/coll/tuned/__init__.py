"""The ``tuned`` coll component: algorithms chosen by communicator and message size."""

__version__ = "0.1.0"

from .component import TunedComponent  # after __version__: component.py imports it
from .decision import ALGORITHMS, decide
from .module import Settings, TunedModule

__all__ = ["ALGORITHMS", "Settings", "TunedComponent", "TunedModule", "__version__", "decide"]
