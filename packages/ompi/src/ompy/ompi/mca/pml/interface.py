"""The pml framework's interfaces: what a point-to-point messaging component provides.

The PML (point-to-point management layer) sits under ``Comm.Send``/``Comm.Recv``: it matches
messages to receives and runs the protocols that move them (eager, rendezvous, RDMA) over the
transports.  Exactly one PML runs in a process and every process of a job must run the same
one, since their wire formats differ.  Its module works with requests; blocking calls are the
API layer's loop over the progress engine.
"""

from __future__ import annotations

import abc
import enum
from typing import Any, ClassVar

from ompy.opal.mca import Component, Offer

#: The version of this interface; components declare the version they were written against.
INTERFACE_VERSION = (1, 0)


class SendMode(enum.Enum):
    """MPI's send modes: when a send may complete (Send, Bsend, Ssend, Rsend)."""

    #: The PML chooses: buffer the message (eager) or wait for the receiver (rendezvous).
    STANDARD = "standard"
    #: Copy into the buffer attached with ``Attach_buffer`` and complete at once.
    BUFFERED = "buffered"
    #: Complete only once the receiver has matched the message.
    SYNCHRONOUS = "synchronous"
    #: The receive is already posted; an error if the PML can tell it is not.
    READY = "ready"


class PmlModule(abc.ABC):
    """One process's point-to-point engine.

    ``spec`` arguments are :class:`~ompy.ompi.datatype.buffer.BufferSpec` objects, ``comm`` is
    the communicator (its context id, group and the PML's per-communicator state), ranks are
    ranks in that communicator, and the API layer has already checked ranks and tags and taken
    care of ``PROC_NULL``.  Nonblocking calls return request objects the API layer wraps.
    """

    #: The largest tag this PML carries (the ``TAG_UB`` attribute of ``COMM_WORLD``).
    max_tag: int
    #: The largest communicator context id its headers can carry.
    max_contextid: int

    @abc.abstractmethod
    def add_procs(self, procs: list[Any]) -> None:
        """Make the processes reachable (set up transport endpoints for each)."""

    @abc.abstractmethod
    def del_procs(self, procs: list[Any]) -> None:
        """Forget the processes (their communicators are gone)."""

    @abc.abstractmethod
    def add_comm(self, comm: Any) -> None:
        """Create the matching state of a new communicator (before any message can arrive)."""

    @abc.abstractmethod
    def del_comm(self, comm: Any) -> None:
        """Drop the matching state of a freed communicator."""

    @abc.abstractmethod
    def isend(self, spec: Any, dest: int, tag: int, comm: Any, mode: SendMode) -> Any:
        """Start sending ``spec`` to ``dest``; returns the send request."""

    @abc.abstractmethod
    def irecv(self, spec: Any, source: int, tag: int, comm: Any) -> Any:
        """Post a receive into ``spec`` (``source`` may be ANY_SOURCE, ``tag`` ANY_TAG)."""

    @abc.abstractmethod
    def iprobe(self, source: int, tag: int, comm: Any) -> Any:
        """The status of a matching message without receiving it, or None."""

    @abc.abstractmethod
    def improbe(self, source: int, tag: int, comm: Any) -> Any:
        """Take a matching message out of matching for a later ``imrecv``, or None."""

    @abc.abstractmethod
    def imrecv(self, spec: Any, message: Any) -> Any:
        """Receive a message taken by ``improbe``; returns the receive request."""

    @abc.abstractmethod
    def progress(self) -> int:
        """Advance pending protocols; returns how many events were handled."""


class PmlComponent(Component):
    """Base class of pml components: subclasses offer a :class:`PmlModule` from ``query``."""

    framework: ClassVar[str] = "pml"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: Any) -> Offer[PmlModule] | None:
        """Offer a module (with this component's priority) to run in this process, or None."""
        return None
