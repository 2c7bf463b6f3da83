"""The ``mmap`` shmem component: segments are files in a directory, mapped shared."""

__version__ = "0.1.0"

from .component import MmapShmemComponent  # after __version__: component.py imports it

__all__ = ["MmapShmemComponent", "__version__"]
