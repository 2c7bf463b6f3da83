"""The ``pt2pt`` osc component: windows of every flavor over the point-to-point layer."""

__version__ = "0.1.0"

from .component import Pt2ptOscComponent  # after __version__: component.py imports it
from .module import Pt2ptOscModule

__all__ = ["Pt2ptOscComponent", "Pt2ptOscModule", "__version__"]
