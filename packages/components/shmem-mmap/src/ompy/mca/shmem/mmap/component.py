"""A mapped file in a directory as a shmem component.

Any directory on a local file system works, which makes this the fallback when /dev/shm is
missing or too small.  By default the segments go to the session directory, which the launcher
removes when the job ends, so even a job whose ranks were killed leaves nothing behind.  The
directory is chosen when the first segment is created, so a process that never creates one
never creates a private session directory either.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ompy.opal.mca.params import ParamType
from ompy.opal.mca.shmem.base import FileShmemComponent, usable_directory
from ompy.opal.session import session_dir

from . import __version__


class MmapShmemComponent(FileShmemComponent):
    """Segments are files in ``shmem_mmap_directory`` (default: the session directory)."""

    name = "mmap"
    version = __version__
    description = "segments are files in a directory (default: the session directory)"
    default_priority = 10

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

    def problem(self) -> str | None:
        configured = self.configured_directory()
        return None if configured is None else usable_directory(configured)

    def segment_directory(self) -> Path | Callable[[], Path]:
        configured = self.configured_directory()
        return session_dir if configured is None else configured

    def configured_directory(self) -> Path | None:
        """The directory the user set, made absolute, or None for the session directory."""
        value = self.param("directory")
        return Path(os.path.abspath(value)) if value else None
