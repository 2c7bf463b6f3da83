"""POSIX shared memory as a shmem component.

On Linux, ``shm_open`` is a file in the tmpfs mounted at /dev/shm, so the framework's file-backed
module does the work here with that directory.  The component volunteers only where that
directory is usable and has room: containers often mount a small /dev/shm (64 MiB by default in
Docker), and running out there kills a process at its first touch of the memory, so with less
than ``shmem_posix_min_free`` bytes free we leave the work to a component that maps a file
elsewhere (``mmap``).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from ompy.opal.mca.params import ParamType
from ompy.opal.mca.shmem.base import FileShmemComponent, free_bytes, usable_directory

from . import __version__

DEFAULT_MIN_FREE = 32 * 1024 * 1024


class PosixShmemComponent(FileShmemComponent):
    """Segments are files in /dev/shm; preferred wherever /dev/shm works and has room."""

    name = "posix"
    version = __version__
    description = "POSIX shared memory: segments are files in /dev/shm"
    default_priority = 50
    #: Where POSIX shared memory lives on Linux.
    directory: ClassVar[Path] = Path("/dev/shm")

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "min_free",
            ParamType.INT,
            DEFAULT_MIN_FREE,
            f"Bytes that must be free in {self.directory} for the posix component to run "
            f"(0 disables the check); with less, another shmem component is used",
            level=5,
            minimum=0,
        )

    def segment_directory(self) -> Path:
        return self.directory

    def problem(self) -> str | None:
        problem = usable_directory(self.directory)
        if problem is not None:
            return problem
        wanted = self.param("min_free")
        free = free_bytes(self.directory)
        if wanted and free is not None and free < wanted:
            return (
                f"{self.directory} has {free} bytes free, less than "
                f"{self.param_name('min_free')} = {wanted}"
            )
        return None
