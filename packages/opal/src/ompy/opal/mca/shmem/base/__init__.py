"""Glue of the shmem framework: select this process's module, attach peers' segments, and the
file-backed implementation that components build on.

Typical use by a transport::

    from ompy.opal.mca.shmem import SegmentDescriptor
    from ompy.opal.mca.shmem.base import attach, select_module

    segment = select_module().create(f"ompy-{job}-{rank}-fifo", size)
    modex.put("shmem", segment.descriptor.to_dict())
    ...
    peer = attach(SegmentDescriptor.from_dict(modex.get(other, "shmem")))
"""

from __future__ import annotations

from .files import FileSegmentModule, FileShmemComponent, free_bytes, usable_directory
from .select import Selected, attach, reset_selection, select_module, selection

__all__ = [
    "FileSegmentModule",
    "FileShmemComponent",
    "Selected",
    "attach",
    "free_bytes",
    "reset_selection",
    "select_module",
    "selection",
    "usable_directory",
]
