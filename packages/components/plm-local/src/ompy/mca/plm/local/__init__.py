"""The ``local`` plm component: starts the ranks of a job as child processes on this host."""

__version__ = "0.1.0"

from .component import LocalPlmComponent  # after __version__: component.py imports it

__all__ = ["LocalPlmComponent", "__version__"]
