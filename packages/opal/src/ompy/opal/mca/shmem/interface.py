"""The shmem framework's interfaces: what a component is and what its module must do.

A shmem component knows one way of making memory that processes on a node share (POSIX
shared memory in /dev/shm, a mapped file in a directory, ...).  Its ``query`` says whether that
way works here and with what priority; the framework keeps the single best one per process
(:func:`ompy.opal.mca.shmem.base.select_module`).  The module it offers creates, attaches and
unlinks :class:`~ompy.opal.mca.shmem.segment.Segment` objects.
"""

from __future__ import annotations

import abc
from typing import ClassVar

from ..component import Component, Offer
from .errors import WrongComponentError
from .segment import Segment, SegmentDescriptor

#: The version of this interface; components declare the version they were written against.
INTERFACE_VERSION = (1, 0)


class ShmemModule(abc.ABC):
    """Creates, attaches and unlinks shared-memory segments with one component's mechanism.

    ``component`` is the name of the component that made this module; it is recorded in every
    descriptor the module creates, and :meth:`attach` refuses descriptors of other components.
    ``create``, ``attach`` and ``unlink`` are what every module implements.
    """

    #: The name of the component that made this module.
    component: str

    @abc.abstractmethod
    def create(self, name: str, size: int) -> Segment:
        """Create and map a new segment of ``size`` bytes, exclusively, readable only by us.

        ``name`` is chosen by the caller, unique on the node (include the job id and rank), and
        must start with ``ompy-`` followed by letters, digits, ``_``, ``.`` or ``-``; anything
        else raises :class:`~ompy.opal.mca.shmem.errors.InvalidSegmentNameError`.  A name that
        exists already raises :class:`~ompy.opal.mca.shmem.errors.SegmentExistsError`: reusing
        a stale segment from a crashed job would hand out its old contents.
        """

    @abc.abstractmethod
    def attach(self, descriptor: SegmentDescriptor) -> Segment:
        """Map an existing segment that some process on this node created and published."""

    @abc.abstractmethod
    def unlink(self, descriptor: SegmentDescriptor, *, missing_ok: bool = False) -> None:
        """Remove the segment's name; existing mappings stay valid until they are detached."""

    def check_descriptor(self, descriptor: SegmentDescriptor) -> None:
        """Refuse a descriptor made by another component, naming both."""
        if not isinstance(descriptor, SegmentDescriptor):
            raise TypeError(
                f"expected a SegmentDescriptor (use SegmentDescriptor.from_dict on published "
                f"data), got {type(descriptor).__name__}"
            )
        if descriptor.component != self.component:
            raise WrongComponentError(
                f"segment {descriptor.name!r} was made by the shmem component "
                f"'{descriptor.component}', but was given to the '{self.component}' component; "
                f"attach through ompy.opal.mca.shmem.base.attach(), which routes each descriptor "
                f"to the component that made it"
            )


class ShmemComponent(Component[None, ShmemModule]):
    """Base class of shmem components.

    Subclasses set ``name``, ``version`` and ``default_priority``, and implement
    :meth:`query` (offer a module when the mechanism works here) and :meth:`attach_module` (a
    module able to attach segments that this component made elsewhere on the node, even when
    ``query`` would not offer to create new ones here, for instance because space is short).
    ``query`` is asked once per process, with ``None`` as its context.
    """

    framework: ClassVar[str] = "shmem"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: None) -> Offer[ShmemModule] | None:
        """Offer a module (with this component's priority) to create segments here, or None."""
        return None

    @abc.abstractmethod
    def attach_module(self) -> ShmemModule:
        """A module for attaching to and unlinking this component's segments.

        Every shmem component provides it: a peer may publish a segment this component made
        even where this process selected another one.
        """
