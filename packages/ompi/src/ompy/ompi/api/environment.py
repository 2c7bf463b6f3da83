"""Environment queries: timers, processor name, versions, error strings."""

from __future__ import annotations

import socket
import time

from .. import __version__
from ..constants import SUBVERSION, VERSION
from ..errors import Get_error_class, Get_error_string

__all__ = [
    "Get_error_class",
    "Get_error_string",
    "Get_library_version",
    "Get_processor_name",
    "Get_version",
    "Wtick",
    "Wtime",
]

_clock = time.perf_counter
_TICK = time.get_clock_info("perf_counter").resolution


def Wtime() -> float:
    """Return an elapsed time on the calling processor, in seconds (monotonic, not global)."""
    return _clock()


def Wtick() -> float:
    """Return the resolution of ``Wtime``, in seconds."""
    return _TICK


def Get_processor_name() -> str:
    """Obtain the name of the calling processor (its host name, as Open MPI reports)."""
    return socket.gethostname()


def Get_version() -> tuple[int, int]:
    """Obtain the version number of the MPI standard supported (as Open MPI 5: 3.1)."""
    return (VERSION, SUBVERSION)


def Get_library_version() -> str:
    """Obtain the version string of the MPI library."""
    return (
        f"ompy {__version__} (MPI {VERSION}.{SUBVERSION} in Python, following Open MPI's "
        "architecture)"
    )
