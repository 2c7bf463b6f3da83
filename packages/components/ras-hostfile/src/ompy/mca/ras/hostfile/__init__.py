"""The ``hostfile`` ras component: allocation from --host lists and Open MPI style hostfiles."""

__version__ = "0.1.0"

from .component import HostfileRasComponent  # after __version__: component.py imports it

__all__ = ["HostfileRasComponent", "__version__"]
