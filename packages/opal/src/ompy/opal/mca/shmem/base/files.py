"""Segments backed by a file in a directory and mapped with ``mmap``: the shared helper.

On Linux, POSIX shared memory *is* a file in the tmpfs at /dev/shm, and the mmap component maps
a file in any directory, so both components share this one careful implementation and differ
only in where the file lives and when they volunteer.  The care:

- the file is created with ``O_CREAT | O_EXCL`` (a stale segment from a crashed job is refused,
  never silently reused) and mode 0600 (other users cannot read or write ranks' memory);
- its space is reserved up front with ``posix_fallocate``: on tmpfs a sparse file that later runs
  out of room kills the process with SIGBUS at the first touch, whereas reserving turns that
  into a clear error at creation;
- attaching opens with ``O_NOFOLLOW`` and checks that the path is a regular file of this user at
  least as large as published, because the path comes from a peer through the key-value store.
"""

from __future__ import annotations

import abc
import contextlib
import errno
import mmap
import os
import stat
from collections.abc import Callable
from pathlib import Path

from ...component import Offer
from ...params import Registry
from ..errors import (
    SegmentExistsError,
    SegmentNotFoundError,
    SegmentSpaceError,
    ShmemError,
    WrongNodeError,
)
from ..interface import ShmemComponent, ShmemModule
from ..segment import (
    Segment,
    SegmentDescriptor,
    check_segment_name,
    check_segment_size,
    this_node,
)

_CREATE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
_ATTACH_FLAGS = os.O_RDWR | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
#: Errors meaning "this file system cannot reserve space"; the segment then stays sparse.
_NO_RESERVE = {errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS}


def free_bytes(directory: Path | str) -> int | None:
    """Bytes an unprivileged user can still allocate under ``directory``, or None if unknown."""
    try:
        stats = os.statvfs(directory)
    except (OSError, AttributeError):
        return None
    return stats.f_bavail * stats.f_frsize


def usable_directory(directory: Path | str) -> str | None:
    """None when segments can be created in ``directory``, else why not (for diagnostics)."""
    path = Path(directory)
    if not path.is_dir():
        return f"{path} is not a directory"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{path} is not writable by this user"
    return None


class FileSegmentModule(ShmemModule):
    """A shmem module whose segments are files in one directory, mapped shared.

    ``directory`` may be a callable so that a component can defer choosing (and creating) its
    directory until the first segment is actually created.
    """

    def __init__(self, component: str, directory: Path | str | Callable[[], Path]) -> None:
        self.component = component
        self._directory = directory

    @property
    def directory(self) -> Path:
        """Where this module creates its segments."""
        directory = self._directory() if callable(self._directory) else self._directory
        return Path(os.path.abspath(directory))

    def create(self, name: str, size: int) -> Segment:
        check_segment_name(name)
        check_segment_size(size)
        path = self.directory / name
        try:
            fd = os.open(path, _CREATE_FLAGS, 0o600)
        except FileExistsError:
            raise SegmentExistsError(
                f"cannot create shared-memory segment {name!r}: {path} already exists; segment "
                f"names are created exclusively, so choose a name unique to this job and rank, "
                f"or remove {path} if it was left behind by a job that is no longer running"
            ) from None
        except OSError as error:
            raise ShmemError(
                f"cannot create shared-memory segment {name!r} at {path} "
                f"(shmem component '{self.component}'): {error.strerror or error}"
            ) from error
        try:
            os.fchmod(fd, 0o600)  # the umask may have removed our own write bit
            os.ftruncate(fd, size)
            self._reserve(fd, path, size)
            mapping = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException as error:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            if isinstance(error, OSError) and not isinstance(error, ShmemError):
                raise ShmemError(
                    f"cannot size or map shared-memory segment {name!r} of {size} bytes at "
                    f"{path}: {error.strerror or error}"
                ) from error
            raise
        finally:
            os.close(fd)
        descriptor = SegmentDescriptor(self.component, name, str(path), size, this_node())
        return Segment(descriptor, mapping, self.unlink)

    def attach(self, descriptor: SegmentDescriptor) -> Segment:
        self._check_local(descriptor)
        path, size = descriptor.path, descriptor.size
        try:
            fd = os.open(path, _ATTACH_FLAGS)
        except FileNotFoundError:
            raise self._gone(descriptor) from None
        except OSError as error:
            reason = "it is a symbolic link" if error.errno == errno.ELOOP else error.strerror
            raise ShmemError(
                f"cannot attach shared-memory segment {descriptor.name!r} at {path}: {reason}"
            ) from error
        try:
            info = os.fstat(fd)
            problem = None
            if not stat.S_ISREG(info.st_mode):
                problem = "it is not a regular file"
            elif info.st_uid != os.geteuid():
                problem = f"it belongs to uid {info.st_uid}, not to this user ({os.geteuid()})"
            elif info.st_size < size:
                problem = (
                    f"it is {info.st_size} bytes long but was published as {size} bytes "
                    f"(a different file that reuses the name?)"
                )
            if problem:
                raise ShmemError(
                    f"refusing to attach shared-memory segment {descriptor.name!r} at {path}: "
                    f"{problem}"
                )
            mapping = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        return Segment(descriptor, mapping, self.unlink)

    def unlink(self, descriptor: SegmentDescriptor, *, missing_ok: bool = False) -> None:
        self._check_local(descriptor)
        try:
            os.unlink(descriptor.path)
        except FileNotFoundError:
            if not missing_ok:
                raise self._gone(descriptor) from None

    def _check_local(self, descriptor: SegmentDescriptor) -> None:
        self.check_descriptor(descriptor)
        node = this_node()
        if descriptor.node != node:
            raise WrongNodeError(
                f"segment {descriptor.name!r} was created on node '{descriptor.node}', but this "
                f"process runs on '{node}'; shared memory is shared only by processes on the "
                f"same node, so use another transport to reach that peer"
            )

    def _gone(self, descriptor: SegmentDescriptor) -> SegmentNotFoundError:
        return SegmentNotFoundError(
            f"shared-memory segment {descriptor.name!r} no longer exists at {descriptor.path} "
            f"(shmem component '{self.component}'): it was unlinked, or the job that created "
            f"it has ended and its files were removed"
        )

    def _reserve(self, fd: int, path: Path, size: int) -> None:
        if not hasattr(os, "posix_fallocate"):
            return
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as error:
            if error.errno in _NO_RESERVE:
                return
            if error.errno in (errno.ENOSPC, errno.EDQUOT):
                free = free_bytes(path.parent)
                room = "unknown" if free is None else f"{free} bytes"
                raise SegmentSpaceError(
                    f"no room for shared-memory segment {path.name!r} of {size} bytes in "
                    f"{path.parent} (free: {room}); free space there, or choose another shmem "
                    f"component or directory (for example OMPY_MCA_shmem=mmap with "
                    f"OMPY_MCA_shmem_mmap_directory on a larger file system)"
                ) from None
            raise

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.component} in {self._directory!r}>"


class FileShmemComponent(ShmemComponent):
    """A shmem component whose segments are files in one directory (a :class:`FileSegmentModule`).

    Subclasses say where the files go (:meth:`segment_directory`) and why they would not
    volunteer here (:meth:`problem`); ``query`` keeps that reason in :attr:`decline_reason`.
    """

    def __init__(self, registry: Registry) -> None:
        super().__init__(registry)
        #: Why the last query declined, for diagnostics; None when it offered.
        self.decline_reason: str | None = None

    @abc.abstractmethod
    def segment_directory(self) -> Path | Callable[[], Path]:
        """Where the segment files go (a callable defers the choice to the first segment)."""

    @abc.abstractmethod
    def problem(self) -> str | None:
        """Why this component should not create segments here, or None when it can."""

    def query(self, context: None) -> Offer[ShmemModule] | None:
        self.decline_reason = self.problem()
        if self.decline_reason is not None:
            return None
        return Offer(self.priority, self.attach_module())

    def attach_module(self) -> ShmemModule:
        return FileSegmentModule(self.name, self.segment_directory())
