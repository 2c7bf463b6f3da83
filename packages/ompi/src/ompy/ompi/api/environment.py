"""Environment queries: timers, processor name, versions, vendor, profiling, hardware, ABI."""

from __future__ import annotations

import re
import socket
import time

from .. import __version__
from ..constants import SUBVERSION, VERSION
from ..errors import ERR_ARG, Get_error_class, Get_error_string
from ..errors import Exception as MPIException
from .checks import as_int
from .hwinfo import resources
from .info import Info

__all__ = [
    "Get_abi_fortran_info",
    "Get_abi_info",
    "Get_abi_version",
    "Get_error_class",
    "Get_error_string",
    "Get_hw_resource_info",
    "Get_library_version",
    "Get_processor_name",
    "Get_version",
    "Pcontrol",
    "Wtick",
    "Wtime",
    "get_vendor",
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
    """Obtain the version number of the MPI standard supported (4.1: sessions, buffered-send
    buffers per communicator and session, ``BUFFER_AUTOMATIC``, ``Get_hw_resource_info``)."""
    return (VERSION, SUBVERSION)


def Get_library_version() -> str:
    """Obtain the version string of the MPI library."""
    return (
        f"ompy {__version__} (MPI {VERSION}.{SUBVERSION} in Python, following Open MPI's "
        "architecture)"
    )


def get_vendor() -> tuple[str, tuple[int, int, int]]:
    """Information about the underlying MPI implementation: ``("ompy", (major, minor, micro))``,
    the version of the ``ompy-ompi`` distribution."""
    return ("ompy", _version_triple(__version__))


def _version_triple(version: str) -> tuple[int, int, int]:
    """``"1.2.3"``, ``"1.2"``, ``"1.2.3rc1"`` -> (1, 2, 3), (1, 2, 0), (1, 2, 3)."""
    found = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", version)
    if found is None:
        raise ValueError(f"get_vendor: the version {version!r} does not start with a number")
    major, minor, micro = (int(part or 0) for part in found.groups())
    return (major, minor, micro)


def Pcontrol(level: int) -> None:
    """Control profiling: 0 off, 1 on (the default), 2 on and flushed.

    The hook is for profiling tools that wrap MPI; the library itself, like Open MPI, has
    nothing to switch, so a valid level is accepted and an invalid one is an error.
    """
    level = as_int(level, "Pcontrol: level")
    if not 0 <= level <= 2:
        raise MPIException(ERR_ARG, f"Pcontrol: level {level} is not 0, 1 or 2")


def Get_hw_resource_info() -> Info:
    """Obtain information about the hardware platform of the calling processor.

    Keys are hwloc resource URIs (``hwloc://Package``, ``hwloc://Core``, ...), values
    ``"true"`` where the process is confined to one resource of that type (:mod:`.hwinfo`).
    """
    return Info.Create(resources())


def Get_abi_version() -> tuple[int, int]:
    """Obtain the MPI ABI version number: ompy has no C ABI, so this raises
    ``NotImplementedError``, as mpi4py does with an MPI library without the MPI 5 ABI."""
    raise NotImplementedError(_NO_ABI.format("Get_abi_version"))


def Get_abi_info() -> Info:
    """Obtain information about the MPI ABI (``NotImplementedError``: see `Get_abi_version`)."""
    raise NotImplementedError(_NO_ABI.format("Get_abi_info"))


def Get_abi_fortran_info() -> Info:
    """Obtain information about the Fortran MPI ABI (``NotImplementedError``, as above)."""
    raise NotImplementedError(_NO_ABI.format("Get_abi_fortran_info"))


_NO_ABI = (
    "{}: ompy implements MPI in Python and has no C application binary interface "
    "(the MPI 5.0 ABI); this call is unavailable, as with MPI libraries built without it"
)
