"""A mapped file in a directory as a shmem component.

Any directory on a local file system works, which makes this the fallback when /dev/shm is
missing or too small.  By default the segments go to the session directory, which the launcher
removes when the job ends, so even a job whose ranks were killed leaves nothing behind.  The
directory is chosen when the first segment is created, so a process that never creates one
never creates a private session directory either.
"""

from __future__ import annotations

import os
from pathlib import Path

from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamType, Registry
from ompy.opal.mca.shmem import ShmemComponent, ShmemModule
from ompy.opal.mca.shmem.base import FileSegmentModule, usable_directory
from ompy.opal.session import session_dir

from . import __version__


class MmapShmemComponent(ShmemComponent):
    """Segments are files in ``shmem_mmap_directory`` (default: the session directory)."""

    name = "mmap"
    version = __version__
    description = "segments are files in a directory (default: the session directory)"
    default_priority = 10

    def __init__(self, registry: Registry) -> None:
        super().__init__(registry)
        #: Why the last query declined, for diagnostics; None when it offered.
        self.decline_reason: str | None = None

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "directory",
            ParamType.STR,
            "",
            "Directory for shared-memory segment files; empty means the session directory "
            "($OMPY_SESSION_DIR under ompy run, removed with the job). Use a local file system",
            level=4,
        )

    def query(self, context: None) -> Offer[ShmemModule] | None:
        configured = self.configured_directory()
        self.decline_reason = None if configured is None else usable_directory(configured)
        if self.decline_reason is not None:
            return None
        return Offer(self.priority, self.attach_module())

    def attach_module(self) -> ShmemModule:
        configured = self.configured_directory()
        return FileSegmentModule(self.name, session_dir if configured is None else configured)

    def configured_directory(self) -> Path | None:
        """The directory the user set, made absolute, or None for the session directory."""
        value = self.param("directory")
        return Path(os.path.abspath(value)) if value else None
