"""The ``inter`` coll component: every collective on intercommunicators (MPI's semantics)."""

__version__ = "0.1.0"

from .component import (
    InterCollComponent,
    InterCollModule,
)  # after __version__: component.py imports it

__all__ = ["InterCollComponent", "InterCollModule", "__version__"]
