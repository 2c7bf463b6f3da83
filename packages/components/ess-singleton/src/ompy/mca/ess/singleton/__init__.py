"""The ``singleton`` ess component: a program started on its own is a job of size 1."""

__version__ = "0.1.0"

from .component import SingletonEssComponent  # after __version__: component.py imports it

__all__ = ["SingletonEssComponent", "__version__"]
