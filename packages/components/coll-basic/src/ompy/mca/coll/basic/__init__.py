"""The ``basic`` coll component: reference algorithms for every collective, on point-to-point."""

__version__ = "0.1.0"

from .component import (
    BasicCollComponent,
    BasicCollModule,
)  # after __version__: component.py imports it

__all__ = ["BasicCollComponent", "BasicCollModule", "__version__"]
