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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from ompy.opal.mca import Component, Offer

from .context import PmlContext

if TYPE_CHECKING:
    from ompy.opal.proc import Proc

    from ...completion import CompletionCallback
    from ...datatype.buffer import BufferSpec

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


class PmlComm(Protocol):
    """What the PML sees of a communicator (the API's ``Communicator`` has this shape).

    ``world_ranks[r]`` is the world rank of communicator rank ``r`` (of the caller's own group);
    ``remote_world_ranks[r]`` the world rank of the process a point-to-point call to or from
    rank ``r`` addresses: the remote group's for an intercommunicator, the same ranks as
    ``world_ranks`` for an intracommunicator.  ``rank`` and ``size`` are the caller's rank in
    its own group and that group's size; a message carries its sender's ``rank``, which the
    receiver reads as a rank of its remote group.  ``context_id`` is the same on every member
    (of both groups) and unique among this process's live communicators.  ``pml_state`` is the
    PML's own per-communicator state, set by ``add_comm`` and cleared by ``del_comm``: its type
    is each PML's business, hence ``Any``.
    """

    @property
    def context_id(self) -> int: ...
    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def world_ranks(self) -> Sequence[int]: ...
    @property
    def remote_world_ranks(self) -> Sequence[int]: ...

    pml_state: Any


class PmlRequest(Protocol):
    """What a PML's nonblocking calls return, and all the API reads off it or sets on it.

    :class:`~ompy.ompi.completion.CoreRequest` has this shape and PMLs subclass it.  Once
    ``complete`` is true, ``source``, ``tag`` and ``count`` (bytes received, or sent) are the
    status, ``error`` the MPI error class (0 for success) and ``exception`` the error a wait
    raises, or None; ``cancelled`` tells whether ``cancel()`` took effect.  ``on_complete`` is
    run once, with the request, when it completes (the API chains further steps on it: the
    buffers of a pickled object, the release of a buffered send's space).
    """

    complete: bool
    cancelled: bool
    source: int
    tag: int
    count: int
    error: int
    exception: BaseException | None
    on_complete: CompletionCallback | None

    def cancel(self) -> None:
        """Cancel a receive that has not matched; anything else may ignore the request."""


class SizedRecvRequest(PmlRequest, Protocol):
    """A receive whose buffer the PML allocated at match time (``irecv_view(None, ...)``).

    Once complete, ``view`` is a writable flat byte view of exactly the message.
    """

    view: memoryview | None


class ProbeStatus(Protocol):
    """What ``iprobe`` reports of a message that would match: its envelope and byte length."""

    @property
    def source(self) -> int: ...
    @property
    def tag(self) -> int: ...
    @property
    def count(self) -> int: ...


class PmlMessage(ProbeStatus, Protocol):
    """A message ``improbe`` took out of matching: opaque to the API but for its envelope.

    It is handed back to the PML that made it, in ``imrecv``, exactly once.
    """


class PmlModule(abc.ABC):
    """One process's point-to-point engine.

    ``spec`` arguments are :class:`~ompy.ompi.datatype.buffer.BufferSpec` objects, ``comm`` is
    the communicator (:class:`PmlComm`: its context id, ranks and the PML's per-communicator
    state), ranks are ranks in that communicator, and the API layer has already checked ranks
    and tags and taken care of ``PROC_NULL``.  Nonblocking calls return :class:`PmlRequest`
    objects the API layer wraps.

    Besides the buffer-spec calls (``isend``, ``irecv``), the API's hot path uses *view* calls
    on flat byte memoryviews (``send_view``, ``isend_view``, ``irecv_view``): the uppercase
    calls on whole contiguous buffers and every lowercase (pickled) message go through them.
    ``irecv_view(None, ...)`` is the *sized receive*: a receive posted in matching order whose
    buffer the PML allocates once the message has matched, how a pickled object (whose size
    only its sender knows) is received without a probe.
    """

    #: The largest tag this PML carries (the ``TAG_UB`` attribute of ``COMM_WORLD``).
    max_tag: int
    #: Whether typed data may be handed over as raw bytes (the view calls).  False in a
    #: heterogeneous job, where the PML converts typed data between representations: the API
    #: then passes buffer specs (which keep the datatype) for every typed message; pickled
    #: objects and untyped bytes still go through the view calls, never converted.
    raw_views: bool = True
    #: The largest communicator context id its headers can carry.
    max_contextid: int

    @abc.abstractmethod
    def add_procs(self, procs: Sequence[Proc], keys: Sequence[int]) -> None:
        """Make the processes reachable (set up transport endpoints for each).

        ``keys[i]`` is the number communicators name ``procs[i]`` by (in ``world_ranks`` and
        ``remote_world_ranks``): its world rank, or the index a process of another job got
        (:mod:`ompy.ompi.proctable`); ``procs[i].rank`` is its universe rank, the name the
        transports use.  For the launcher's first job the two are equal.
        """

    @abc.abstractmethod
    def del_procs(self, procs: Sequence[Proc]) -> None:
        """Forget the processes (their communicators are gone)."""

    @abc.abstractmethod
    def add_comm(self, comm: PmlComm) -> None:
        """Create the matching state of a new communicator (before any message can arrive)."""

    @abc.abstractmethod
    def del_comm(self, comm: PmlComm) -> None:
        """Drop the matching state of a freed communicator."""

    @abc.abstractmethod
    def isend(
        self, spec: BufferSpec, dest: int, tag: int, comm: PmlComm, mode: SendMode
    ) -> PmlRequest:
        """Start sending ``spec`` to ``dest``; returns the send request."""

    @abc.abstractmethod
    def isend_view(
        self, data: memoryview, dest: int, tag: int, comm: PmlComm, mode: SendMode
    ) -> PmlRequest:
        """:meth:`isend` of the flat byte view ``data`` (no buffer spec to unpack)."""

    def send_view(self, data: memoryview, dest: int, tag: int, comm: PmlComm) -> PmlRequest | None:
        """Start a blocking standard send of ``data``: None if it already left, else a request.

        ``Send`` and ``send`` call it: a PML that can hand a short message to its transport at
        once returns None and makes no request at all.  The default makes the request
        (:meth:`isend_view` in standard mode), which is always correct.
        """
        return self.isend_view(data, dest, tag, comm, SendMode.STANDARD)

    @abc.abstractmethod
    def irecv(self, spec: BufferSpec, source: int, tag: int, comm: PmlComm) -> PmlRequest:
        """Post a receive into ``spec`` (``source`` may be ANY_SOURCE, ``tag`` ANY_TAG)."""

    @abc.abstractmethod
    def irecv_view(
        self, view: memoryview | None, source: int, tag: int, comm: PmlComm
    ) -> SizedRecvRequest:
        """Post a receive into the flat writable byte view ``view``; None: a sized receive.

        With None the request's ``view`` becomes, at match time, a new buffer of exactly the
        message's length; the receive keeps its place in matching order from the moment it
        is posted, like any other.
        """

    def recv_now(
        self, view: memoryview | None, source: int, tag: int, comm: PmlComm
    ) -> tuple[int, int, memoryview] | None:
        """A blocking receive from the specific rank ``source``, done inline if it can be.

        ``Recv`` and ``recv`` try it before posting a receive: a PML that can see that only
        one message can match, and get it without a request or a progress pass (ob1's
        small-message fast path), receives it into ``view`` (None: a new buffer of the
        message's size) and returns ``(tag, count, view)``.  None means "not this way":
        nothing was received or changed, and the caller takes the general path.  The
        default always answers None, which is always correct.
        """
        return None

    @abc.abstractmethod
    def iprobe(self, source: int, tag: int, comm: PmlComm) -> ProbeStatus | None:
        """The status of a matching message without receiving it, or None."""

    @abc.abstractmethod
    def improbe(self, source: int, tag: int, comm: PmlComm) -> PmlMessage | None:
        """Take a matching message out of matching for a later ``imrecv``, or None."""

    @abc.abstractmethod
    def imrecv(self, spec: BufferSpec | None, message: PmlMessage) -> SizedRecvRequest:
        """Receive a message taken by ``improbe`` into ``spec`` (None: a buffer of its size)."""

    @abc.abstractmethod
    def progress(self) -> int:
        """Advance pending protocols; returns how many events were handled."""

    @abc.abstractmethod
    def finalize(self) -> None:
        """Complete what is owed to peers and release the transports; called once, at the end.

        It runs after every communicator is gone (the instance's teardown); it may raise an
        ``MPI.Exception`` naming what could not be completed.
        """


class PmlComponent(Component[PmlContext, PmlModule]):
    """Base class of pml components: subclasses offer a :class:`PmlModule` from ``query``."""

    framework: ClassVar[str] = "pml"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: PmlContext) -> Offer[PmlModule] | None:
        """Offer a module (with this component's priority) to run in this process, or None."""
        return None
