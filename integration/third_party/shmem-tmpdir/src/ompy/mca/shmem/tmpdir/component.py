"""A shmem component that keeps its segments in a temporary directory.

It builds on the shmem framework's public interface only: it subclasses
:class:`~ompy.opal.mca.shmem.ShmemComponent` and hands out the framework's file-backed module
(:class:`~ompy.opal.mca.shmem.base.FileSegmentModule`: exclusive creation, mode 0600, space
reserved up front, careful attaching), pointed at its own directory.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamType
from ompy.opal.mca.shmem import ShmemComponent, ShmemModule
from ompy.opal.mca.shmem.base import FileSegmentModule, usable_directory

from . import __version__


class TmpdirShmemComponent(ShmemComponent):
    """Segments are files in ``shmem_tmpdir_directory`` (default: the temporary directory)."""

    name = "tmpdir"
    version = __version__
    description = "segments are files in a temporary directory"
    # Below posix (50) and mmap (10): installing this package changes nothing until the user
    # asks for it (OMPY_MCA_shmem=tmpdir) or raises OMPY_MCA_shmem_tmpdir_priority above 50.
    default_priority = 5

    def register_params(self) -> None:
        super().register_params()  # registers shmem_tmpdir_priority
        self.register_param(
            "directory",
            ParamType.STR,
            "",
            "Directory for the segment files; empty means the system's temporary directory",
            level=4,
        )

    def query(self, context: None) -> Offer[ShmemModule] | None:
        # Stay out (so another component runs) when the directory cannot hold segments.
        if usable_directory(self.directory()) is not None:
            return None
        return Offer(self.priority, self.attach_module())

    def attach_module(self) -> ShmemModule:
        return FileSegmentModule(self.name, self.directory())

    def directory(self) -> Path:
        """Where segments go: the parameter's value, or the system's temporary directory."""
        return Path(os.path.abspath(self.param("directory") or tempfile.gettempdir()))
