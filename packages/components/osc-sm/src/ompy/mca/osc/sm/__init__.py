"""The ``sm`` osc component: windows in shared memory, with direct loads and stores."""

__version__ = "0.1.0"

from .component import SmOscComponent  # after __version__: component.py imports it
from .module import SmOscModule

__all__ = ["SmOscComponent", "SmOscModule", "__version__"]
