"""The ``posix`` shmem component: segments in POSIX shared memory (/dev/shm on Linux)."""

__version__ = "0.1.0"

from .component import PosixShmemComponent  # after __version__: component.py imports it

__all__ = ["PosixShmemComponent", "__version__"]
