"""The ``basic`` topo component: every process keeps its rank when a topology is reordered."""

__version__ = "0.1.0"

from .component import (
    BasicTopoComponent,
    BasicTopoModule,
)  # after __version__: component.py imports it

__all__ = ["BasicTopoComponent", "BasicTopoModule", "__version__"]
