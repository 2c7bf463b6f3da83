"""The ``tuned`` coll component: algorithms chosen by communicator and message size."""

__version__ = "0.1.0"

from .component import TunedCollComponent  # after __version__: component.py imports it
from .decision import ALGORITHMS, decide
from .module import Settings, TunedCollModule

__all__ = [
    "ALGORITHMS",
    "Settings",
    "TunedCollComponent",
    "TunedCollModule",
    "__version__",
    "decide",
]
