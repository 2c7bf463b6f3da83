"""The ``ssh`` plm component: one ``ompy daemon`` per node, started through ssh."""

__version__ = "0.1.0"

from .component import SshPlmComponent  # after __version__: component.py imports it

__all__ = ["SshPlmComponent", "__version__"]
