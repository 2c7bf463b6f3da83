"""The ``env`` ess component: a launched rank's identity, read from ``OMPY_*`` variables."""

__version__ = "0.1.0"

from .component import EnvEssComponent  # after __version__: component.py imports it

__all__ = ["EnvEssComponent", "__version__"]
