"""The shmem framework: memory that the processes of one node map together.

Transports such as the sm BTL create a segment, publish its :class:`SegmentDescriptor` through
the job's key-value store, and peers on the node attach to it.  How the memory is made is a
component's business (``ompy-shmem-posix``: /dev/shm; ``ompy-shmem-mmap``: a file in a
directory); the framework keeps the single best one per process
(:func:`ompy.opal.mca.shmem.base.select_module`).
"""

from __future__ import annotations

from ..framework import Cardinality, Framework
from .errors import (
    InvalidDescriptorError,
    InvalidSegmentNameError,
    InvalidSegmentSizeError,
    SegmentBusyError,
    SegmentDetachedError,
    SegmentExistsError,
    SegmentNotFoundError,
    SegmentSpaceError,
    ShmemError,
    WrongComponentError,
    WrongNodeError,
)
from .interface import INTERFACE_VERSION, ShmemComponent, ShmemModule
from .segment import NAME_PREFIX, Segment, SegmentDescriptor, check_segment_name

framework = Framework.of(
    # mypy takes a class argument for one to instantiate; this abstract one is only read.
    ShmemComponent,  # type: ignore[type-abstract]
    "opal",
    Cardinality.ONE,
    "shared-memory segments that the processes of one node map together",
)

__all__ = [
    "INTERFACE_VERSION",
    "NAME_PREFIX",
    "InvalidDescriptorError",
    "InvalidSegmentNameError",
    "InvalidSegmentSizeError",
    "Segment",
    "SegmentBusyError",
    "SegmentDescriptor",
    "SegmentDetachedError",
    "SegmentExistsError",
    "SegmentNotFoundError",
    "SegmentSpaceError",
    "ShmemComponent",
    "ShmemError",
    "ShmemModule",
    "WrongComponentError",
    "WrongNodeError",
    "check_segment_name",
    "framework",
]
