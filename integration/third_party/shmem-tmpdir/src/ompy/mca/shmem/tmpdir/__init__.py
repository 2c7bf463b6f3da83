"""The ``tmpdir`` shmem component: segments are files in a temporary directory, mapped shared."""

__version__ = "1.0.0"

from .component import TmpdirShmemComponent  # after __version__: component.py imports it

__all__ = ["TmpdirShmemComponent", "__version__"]
