"""A shared-memory segment: its published description and this process's mapping of it.

A :class:`SegmentDescriptor` is what a creator publishes (through the job's key-value store) so
that peers on the same node can attach: it is plain data that round-trips through JSON.  A
:class:`Segment` is one process's live mapping: a writable ``memoryview`` and numpy views over the
same physical pages that every attached process sees.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .errors import (
    InvalidDescriptorError,
    InvalidSegmentNameError,
    InvalidSegmentSizeError,
    SegmentBusyError,
    SegmentDetachedError,
)

if TYPE_CHECKING:
    import mmap

    import numpy as np
    from numpy.typing import DTypeLike

#: Every segment name starts with this, so that ``ls /dev/shm/ompy-*`` (and a launcher cleaning up
#: after a crashed job) finds ompy's segments and nobody else's.
NAME_PREFIX = "ompy-"
#: The longest file name Linux and macOS accept (NAME_MAX).
NAME_MAX = 255
_NAME_RE = re.compile(r"ompy-[A-Za-z0-9_.-]+")


def check_segment_name(name: object) -> str:
    """Return ``name`` if it is a valid segment name, else raise :class:`InvalidSegmentNameError`.

    Names become file names in a shared directory such as /dev/shm, so they are restricted to
    ``ompy-`` followed by letters, digits, ``_``, ``.`` and ``-``: no path separators, no
    spaces, nothing a shell or another user's process could misread.
    """
    if not isinstance(name, str):
        raise InvalidSegmentNameError(
            f"a shared-memory segment name must be a str, got {type(name).__name__} {name!r}"
        )
    if not name.startswith(NAME_PREFIX):
        raise InvalidSegmentNameError(
            f"shared-memory segment name {name!r} must start with {NAME_PREFIX!r} "
            f"(for example 'ompy-<job>-<rank>-fifo')"
        )
    if not _NAME_RE.fullmatch(name):
        raise InvalidSegmentNameError(
            f"shared-memory segment name {name!r} may contain only letters, digits, '_', '.' "
            f"and '-' after {NAME_PREFIX!r}, and must not be empty after it"
        )
    if len(name) > NAME_MAX:
        raise InvalidSegmentNameError(
            f"shared-memory segment name {name[:40]!r}... is {len(name)} characters long; "
            f"the limit is {NAME_MAX}"
        )
    return name


def check_segment_size(size: object) -> int:
    """Return ``size`` if it is a positive ``int``, else raise :class:`InvalidSegmentSizeError`."""
    if isinstance(size, bool) or not isinstance(size, int):
        raise InvalidSegmentSizeError(
            f"a shared-memory segment size must be an int number of bytes, "
            f"got {type(size).__name__} {size!r}"
        )
    if size <= 0:
        raise InvalidSegmentSizeError(
            f"a shared-memory segment size must be at least 1 byte, got {size}"
        )
    return size


def this_node() -> str:
    """The name of this node, as recorded in descriptors."""
    return socket.gethostname()


def _valid_name(_instance: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    try:
        check_segment_name(value)
    except InvalidSegmentNameError as error:
        raise InvalidDescriptorError(f"invalid segment descriptor: {error}") from None


def _valid_size(_instance: object, _attribute: attrs.Attribute[Any], value: object) -> None:
    try:
        check_segment_size(value)
    except InvalidSegmentSizeError as error:
        raise InvalidDescriptorError(f"invalid segment descriptor: {error}") from None


def _non_empty_str(_instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidDescriptorError(
            f"invalid segment descriptor: '{attribute.name}' must be a non-empty str, "
            f"got {type(value).__name__} {value!r}"
        )


def _absolute_path(
    instance: SegmentDescriptor, attribute: attrs.Attribute[Any], value: object
) -> None:
    _non_empty_str(instance, attribute, value)
    assert isinstance(value, str)
    if not os.path.isabs(value) or os.path.basename(value) != instance.name:
        raise InvalidDescriptorError(
            f"invalid segment descriptor: 'path' must be an absolute path whose last part is "
            f"the segment name {instance.name!r}, got {value!r}"
        )


@attrs.frozen
class SegmentDescriptor:
    """Everything a peer needs to attach to a segment, as plain JSON-able data.

    ``component`` names the shmem component that made the segment, so that attaching goes to
    the same mechanism; ``path`` is where the creator's component put it (the mmap component's
    directory may differ between processes); ``node`` is the creator's host name, because a
    segment cannot be shared across nodes and attaching there must fail clearly, not find an
    unrelated file.
    """

    component: str = attrs.field(validator=_non_empty_str)
    name: str = attrs.field(validator=_valid_name)
    path: str = attrs.field(validator=_absolute_path)
    size: int = attrs.field(validator=_valid_size)
    node: str = attrs.field(validator=_non_empty_str)

    def to_dict(self) -> dict[str, Any]:
        """The descriptor as a dict of str and int, ready for ``json.dumps`` or the modex."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SegmentDescriptor:
        """Rebuild a descriptor from :meth:`to_dict` output, refusing anything else clearly."""
        if not isinstance(data, Mapping):
            raise InvalidDescriptorError(
                f"a segment descriptor must be a mapping, got {type(data).__name__} {data!r}"
            )
        fields = [field.name for field in attrs.fields(cls)]
        missing = [name for name in fields if name not in data]
        unknown = sorted(str(key) for key in data if key not in fields)
        if missing or unknown:
            problems = []
            if missing:
                problems.append(f"missing {', '.join(missing)}")
            if unknown:
                problems.append(f"unknown {', '.join(unknown)}")
            raise InvalidDescriptorError(
                f"invalid segment descriptor {dict(data)!r}: {'; '.join(problems)} "
                f"(expected exactly the keys {', '.join(fields)})"
            )
        return cls(**{name: data[name] for name in fields})


class Segment:
    """This process's mapping of one shared-memory segment.

    ``buffer`` and ``array()`` give views over the mapping; every process attached to the
    segment sees writes through them.  Detaching unmaps the memory, which is only safe when no
    view is left: the mapping refuses while views exist, and :meth:`detach` turns that into a
    :class:`SegmentBusyError` that says what to release.

    Use the segment as a context manager to detach when the block ends.  Views still alive at
    that point are an error, unless the block is left by an exception: that exception is then
    the one that propagates.  Unlinking (removing the name) is a separate, explicit step,
    because usually only the creator does it, once every peer has attached.
    """

    def __init__(
        self,
        descriptor: SegmentDescriptor,
        mapping: mmap.mmap,
        unlink: Callable[[SegmentDescriptor], None],
    ) -> None:
        self._descriptor = descriptor
        self._mapping: mmap.mmap | None = mapping
        self._unlink = unlink

    @property
    def descriptor(self) -> SegmentDescriptor:
        """What peers need to attach: publish ``descriptor.to_dict()``."""
        return self._descriptor

    @property
    def name(self) -> str:
        return self._descriptor.name

    @property
    def size(self) -> int:
        """Size of the segment in bytes."""
        return self._descriptor.size

    @property
    def attached(self) -> bool:
        """Whether the memory is still mapped in this process."""
        return self._mapping is not None

    @property
    def buffer(self) -> memoryview:
        """A new writable, byte-format memoryview over the whole segment.

        Each access makes a new view; a view kept alive blocks :meth:`detach` until it is
        released (``view.release()`` or ``del view``).
        """
        return memoryview(self._mapped())

    def array(self, dtype: DTypeLike | None = None, offset: int = 0, count: int = -1) -> np.ndarray:
        """A numpy array viewing the segment from byte ``offset``: ``count`` items of ``dtype``.

        ``dtype`` defaults to ``numpy.uint8``; ``count=-1`` means as many whole items as fit
        after ``offset``.  The array shares memory with every attached process; it blocks
        :meth:`detach` while it (or any view derived from it) is alive.
        """
        import numpy as np

        mapping = self._mapped()
        dtype = np.dtype(np.uint8 if dtype is None else dtype)
        size = self.size
        if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= size:
            raise ValueError(
                f"offset {offset!r} is outside segment {self.name!r} of {size} bytes "
                f"(expected an int from 0 to {size})"
            )
        room = (size - offset) // dtype.itemsize
        if count == -1:
            count = room
        elif isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= room:
            raise ValueError(
                f"count {count!r} of {dtype} items from offset {offset} does not fit in segment "
                f"{self.name!r} of {size} bytes (at most {room} fit; -1 means all of them)"
            )
        return np.frombuffer(mapping, dtype=dtype, count=count, offset=offset)

    def detach(self) -> None:
        """Unmap the segment from this process; detaching twice is harmless.

        Raises :class:`SegmentBusyError` (a ``BufferError``) and stays attached while views from
        :attr:`buffer` or :meth:`array` are alive, because unmapping under them would leave them
        pointing at nothing.
        """
        if self._mapping is None:
            return
        try:
            self._mapping.close()
        except BufferError:
            raise SegmentBusyError(
                f"cannot detach shared-memory segment {self.name!r}: memoryviews or numpy arrays "
                f"over it are still alive in this process; release them (del the arrays, "
                f"view.release()) and detach again"
            ) from None
        self._mapping = None

    def unlink(self) -> None:
        """Remove the segment's name so nobody new can attach; mappings stay valid until detached.

        Usually the creator unlinks once every peer has attached (after a fence).
        """
        self._unlink(self._descriptor)

    def _mapped(self) -> mmap.mmap:
        if self._mapping is None:
            raise SegmentDetachedError(
                f"shared-memory segment {self.name!r} was detached from this process; "
                f"attach it again to use its memory"
            )
        return self._mapping

    def __enter__(self) -> Segment:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        try:
            self.detach()
        except SegmentBusyError:
            # While an exception propagates, its traceback keeps the block's local views alive,
            # so detaching must fail; reporting that would hide the real error.  The mapping is
            # then released when the last view is garbage collected.
            if exc_type is None:
                raise

    def __repr__(self) -> str:
        state = "attached" if self.attached else "detached"
        d = self._descriptor
        return f"<Segment {d.name} {d.size} bytes via {d.component} at {d.path} ({state})>"
