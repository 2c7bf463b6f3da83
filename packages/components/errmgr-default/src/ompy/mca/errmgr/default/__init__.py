"""The ``default`` errmgr component: Open MPI's policy, the first failing rank ends the job."""

__version__ = "0.1.0"

from .component import DefaultErrmgrComponent  # after __version__: component.py imports it

__all__ = ["DefaultErrmgrComponent", "__version__"]
