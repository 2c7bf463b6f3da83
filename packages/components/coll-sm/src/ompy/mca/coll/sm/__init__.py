"""The ``sm`` coll component: barrier, bcast, reduce and allreduce through shared memory."""

__version__ = "0.1.0"

from .component import SmCollComponent  # after __version__: component.py imports it
from .module import SmCollModule

__all__ = ["SmCollComponent", "SmCollModule", "__version__"]
