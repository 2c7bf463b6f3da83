"""The ``ufunc`` op component: predefined reductions with numpy ufuncs, in place."""

__version__ = "0.1.0"

from .component import UfuncOpComponent, UfuncOpModule  # after __version__: component.py imports it

__all__ = ["UfuncOpComponent", "UfuncOpModule", "__version__"]
