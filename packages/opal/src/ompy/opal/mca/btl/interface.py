"""The BTL interface: what every byte transfer component and module provides.

A **component** (one per transport: self, tcp, sm) is opened once per process.  Its ``query``
returns an :class:`~ompy.opal.mca.Offer` whose ``module`` is a *list* of :class:`BtlModule`, one per
usable resource (one per network interface for tcp, a single one for self), or ``None`` when the
transport cannot run here.  The MCA core treats that list as the component's one "module"; the
BTL base (:func:`~ompy.opal.mca.btl.base.select_btls`) flattens the lists of every component,
best priority first, which is what the BML (r2) builds its per-peer tables from.

A **module** moves tagged byte fragments to endpoints: ``add_procs`` says which peers it reaches,
``register(tag, callback)`` installs the active-message handler of an upper layer, ``alloc`` /
``prepare_src`` produce descriptors from free lists, ``send`` (or the inline ``sendi``) moves them,
``put`` / ``get`` copy between registered memory where the module offers them.  Received data is
handed to the callback as one contiguous ``memoryview`` that is valid only during the call: the
upper layer copies or unpacks before it returns.  Nothing on this path pickles.

A module is typed by the class of its endpoints (``TcpBtlModule(BtlModule[TcpEndpoint])``):
the endpoints handed to ``send``, ``sendi``, ``put`` and ``get`` are always the ones its own
``add_procs`` made.  Code above the BTL holds modules of any transport, ``BtlModule[Any]``,
each paired with its own endpoints (:class:`~ompy.ompi.mca.bml.BmlBtl`).

Required of every module: ``add_procs``, ``del_procs`` and ``send`` (abstract).  Optional, with
the default in the base class: ``sendi`` (answers "not now"), ``register_mem`` /
``deregister_mem`` / ``put`` / ``get`` (raise :class:`BtlUnsupportedError`; a module offering
them sets ``BtlFlags.PUT``/``GET`` in ``flags``), ``peer_ring`` (None: no ring a receiver can
poll for one peer, see :class:`PeerRing`), ``finalize`` (nothing to release), and the
descriptor methods ``alloc`` / ``free`` / ``prepare_src`` (from the pools
:meth:`BtlModule.setup_free_lists` makes).  Of a component: ``progress`` (nothing to poll) and
``needs_progress``.
"""

from __future__ import annotations

import abc
import enum
import struct
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, Generic, NamedTuple, NoReturn, Protocol, TypeVar

import attrs

from ...freelist import FreeList
from ...modex import Modex
from ...proc import Proc
from ...progress import ProgressEngine
from ..component import Component, Offer
from ..params import ParamType
from .base.tags import TAG_COUNT, check_tag
from .errors import BtlSizeError, BtlTagError, BtlUnsupportedError

INTERFACE_VERSION = (1, 0)


class BtlFlags(enum.IntFlag):
    """What a module can do."""

    SEND = 0x1
    PUT = 0x2
    GET = 0x4
    SENDI = 0x8


class DescriptorFlags(enum.IntFlag):
    """How a module treats a descriptor after sending it."""

    NONE = 0
    #: The module returns the descriptor to its free list once the send completed.
    OWNERSHIP = 0x1
    #: Call the completion callback even when ``send`` completed at once (returned True).
    ALWAYS_CALLBACK = 0x2


# Plain ints for the completion tests below: ``IntFlag & IntFlag`` builds a new flag object
# (about half a microsecond), ``int & int`` does not.
_OWNERSHIP = int(DescriptorFlags.OWNERSHIP)
_ALWAYS_CALLBACK = int(DescriptorFlags.ALWAYS_CALLBACK)

#: ``callback(module, tag, payload)``: the payload view is valid only during the call.
RecvCallback = Callable[["BtlModule[Any]", int, memoryview], None]
#: ``callback(module, endpoint, descriptor, error)`` once a queued send completed or failed.
CompletionCallback = Callable[
    ["BtlModule[Any]", "Endpoint", "Descriptor", "BaseException | None"], None
]
#: ``callback(module, endpoint, error)`` when a peer became unreachable.
ErrorCallback = Callable[["BtlModule[Any]", "Endpoint | None", BaseException], None]
#: ``completion(error)`` once a put or get finished (``error`` is ``None`` on success).
RdmaCompletion = Callable[[BaseException | None], None]


class Endpoint:
    """A module's handle on one reachable peer; transports subclass it to keep connection state."""

    __slots__ = ("module", "proc")

    def __init__(self, module: BtlModule[Any], proc: Proc) -> None:
        self.module = module
        self.proc = proc

    def __repr__(self) -> str:
        return f"<{self.module.name} endpoint to {self.proc}>"


class Descriptor:
    """A fragment to send: owned buffer space plus the segments that go on the wire.

    ``segments[0]`` always starts with the space the upper layer reserved for its header (write
    it with ``struct.pack_into``); a second segment, when present, is the caller's own memory sent
    without a copy (so it must stay untouched until the send completes).  Descriptors come from
    the module's free lists (``alloc``, ``prepare_src``) and go back with ``free``.
    """

    __slots__ = (
        "buffer",
        "cbdata",
        "completion",
        "data_length",
        "flags",
        "home",
        "segments",
        "view",
    )

    def __init__(self, capacity: int, home: FreeList[Descriptor] | None = None) -> None:
        self.buffer = bytearray(capacity)
        self.view = memoryview(self.buffer)
        self.home = home
        self.segments: list[memoryview] = []
        self.data_length = 0
        self.flags = DescriptorFlags.OWNERSHIP
        self.completion: CompletionCallback | None = None
        #: Whatever the sender attaches for its completion callback (the BTL never reads it).
        self.cbdata: Any = None

    @property
    def capacity(self) -> int:
        return len(self.buffer)

    @property
    def length(self) -> int:
        """Bytes this descriptor puts on the wire."""
        return sum(len(segment) for segment in self.segments)

    def reset(self) -> None:
        """Forget the last use (called when the descriptor returns to its free list)."""
        self.segments = []
        self.data_length = 0
        self.flags = DescriptorFlags.OWNERSHIP
        self.completion = None
        self.cbdata = None


def descriptor_free_list(
    capacity: int, name: str, *, initial: int = 0, maximum: int | None = None
) -> FreeList[Descriptor]:
    """A free list of descriptors of ``capacity`` bytes that know their way home."""
    pool: FreeList[Descriptor] = FreeList(
        lambda: Descriptor(capacity, pool), initial=0, maximum=maximum, name=name
    )
    warm = [pool.get() for _ in range(initial)]
    for descriptor in warm:
        if descriptor is not None:
            pool.put(descriptor)
    return pool


class MemHandle(NamedTuple):
    """Memory registered for put/get: which module and key, and how long the region is.

    ``pack()`` gives the bytes an upper layer sends to the peer (in a PUT or RGET header) so the
    peer can name the region in its own ``put`` or ``get``.  A named tuple, not an attrs class:
    one is made per long message on each side, and a frozen attrs instance costs microseconds.
    """

    key: int
    length: int

    def pack(self) -> bytes:
        return self.key.to_bytes(8, "big") + self.length.to_bytes(8, "big")

    @classmethod
    def unpack(cls, data: bytes | memoryview) -> MemHandle:
        if len(data) != 16:
            raise ValueError(f"a packed memory handle is 16 bytes, got {len(data)}")
        raw = bytes(data)
        return cls(int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big"))


@attrs.frozen
class BtlContext:
    """What a BTL component needs to know about the process it runs in.

    The run-time (or a test) builds it: this process's :class:`~ompy.opal.proc.Proc`, the
    :class:`~ompy.opal.modex.Modex` to publish contact information through, the job secret every
    connection must prove (the run-time exports it hex-encoded as ``OMPY_SECRET``), the
    progress engine whose loop will drive the transports, how many processes of the job
    share this node (the run-time's identity; 1 when it does not know) and how many the job has
    (0 when it does not know): with both, a transport between nodes can tell that every peer is
    on this node and stay closed to the network.
    """

    proc: Proc
    modex: Modex
    secret: bytes
    progress: ProgressEngine
    local_size: int = 1
    job_size: int = 0
    #: Components that offered modules reaching every process of the job on this node (sm
    #: adds itself in ``query``).  Components are queried in name order, so a later one (tcp)
    #: can leave local peers to them; one queried earlier sees nothing here and errs on the
    #: safe side.
    node_transports: set[str] = attrs.field(factory=set, eq=False)
    #: Whether processes of other jobs may come to talk to this one (a launcher that serves
    #: dynamic processes: spawn, connect/accept): a network transport must then listen even
    #: when its own job needs it not.
    other_jobs: bool = False

    @staticmethod
    def secret_from_hex(text: str, *, source: str = "OMPY_SECRET") -> bytes:
        """Decode a hex job secret, with an error that says where the bad value came from."""
        try:
            secret = bytes.fromhex(text.strip())
        except ValueError:
            raise ValueError(f"the job secret in {source} is not hexadecimal: {text!r}") from None
        if len(secret) < 16:
            raise ValueError(
                f"the job secret in {source} has {len(secret)} bytes; at least 16 are required"
            )
        return secret


@attrs.frozen
class ModuleAttributes:
    """The attributes the PML and BML schedule by, as configured for one component."""

    eager_limit: int
    max_send_size: int
    rdma_pipeline_send_length: int
    rdma_pipeline_frag_size: int
    min_rdma_pipeline_size: int
    exclusivity: int
    latency: int
    bandwidth: int


#: What a component declares as its modules' defaults (``btl_<name>_eager_limit``, ...): the same
#: eight attributes, before the user's parameters override them.
ModuleDefaults = ModuleAttributes


_MODULE_PARAMS = (
    ("eager_limit", "Largest message (including the PML header) sent eagerly, in bytes", 4),
    ("max_send_size", "Largest fragment a single send may carry, in bytes", 4),
    (
        "rdma_pipeline_send_length",
        "Bytes of a long message sent with send/receive before RDMA takes over",
        5,
    ),
    ("rdma_pipeline_frag_size", "Largest RDMA fragment of the pipeline protocol, in bytes", 5),
    ("min_rdma_pipeline_size", "Smallest message for which the RDMA pipeline is used", 5),
    ("exclusivity", "Exclusivity: a peer reached by a more exclusive BTL uses only that one", 6),
    ("latency", "Relative latency (lower is preferred for small messages)", 6),
    ("bandwidth", "Relative bandwidth in Mbit/s (weights striping of large messages)", 6),
)


#: The endpoint class of a module (``TcpEndpoint`` for tcp).
EndpointT = TypeVar("EndpointT", bound=Endpoint)


class PeerRing(Protocol):
    """The records one peer sent this process, read in place by a receiver that polls them.

    A blocking receive that only one peer can satisfy (the PML's small-message fast path,
    docs/point-to-point.md) polls that peer's ring itself instead of running a progress pass
    over every transport.  ``poll()`` returns the next record, ``(tag, payload)``, without
    consuming it (None: nothing has arrived); the payload view is valid until ``release()``,
    which frees the record (call it only after a record was polled, before polling again).
    A record the poller does not take is left in place: the next progress pass hands it to
    its registered callback as usual, so nothing is lost or reordered.  Used under the same
    rules as the rest of the module: one thread at a time (the MPI lock when threaded).
    """

    def poll(self) -> tuple[int, memoryview] | None: ...

    def poll_header(self, header: struct.Struct) -> tuple[tuple[int, ...], memoryview] | None:
        """:meth:`poll` with the caller's header read in the same step: the next record as
        ``((length, tag, *fields), body)``, left in place, or None if nothing has arrived.

        ``length`` is the payload's length and ``tag`` the record's tag; ``fields`` are
        ``header``'s fields unpacked from the payload's start and ``body`` the payload after
        them.  The fields mean something only for a record whose tag says its payload starts
        with ``header`` (the caller checks the tag first); for another record they are what
        its first bytes hold, or zeros.
        """
        ...

    def release(self) -> None: ...


class ImmediateSend(Protocol):
    """One peer's immediate send of one header layout, bound once (see
    :meth:`BtlModule.immediate`): ``send(payload, *fields)`` sends the header packed from
    ``fields`` followed by the flat byte view ``payload`` at once, or answers False."""

    def __call__(self, payload: memoryview, /, *fields: int) -> bool: ...


class BtlModule(abc.ABC, Generic[EndpointT]):
    """One instance of a transport over one resource; subclasses implement the data movement.

    Attributes the upper layers read directly (bound once at setup): ``eager_limit``,
    ``max_send_size``, the ``rdma_pipeline_*`` sizes, ``latency``, ``bandwidth``,
    ``exclusivity`` and ``flags``.  ``callbacks`` is the tag-indexed table ``register`` fills;
    receivers dispatch with ``callbacks[tag](module, tag, view)``.  See the module
    documentation for what a subclass must implement and what it may.
    """

    #: What the module can do; a module offering put/get or sendi adds those flags.
    flags: BtlFlags = BtlFlags.SEND
    component: BtlComponent
    #: ``<component>`` or ``<component>:<resource>``, for diagnostics.
    name: str
    eager_limit: int
    max_send_size: int
    rdma_pipeline_send_length: int
    rdma_pipeline_frag_size: int
    min_rdma_pipeline_size: int
    exclusivity: int
    latency: int
    bandwidth: int
    callbacks: list[RecvCallback | None]
    error_callbacks: list[ErrorCallback]
    #: The pools of the default descriptor methods (see :meth:`setup_free_lists`).
    eager_descriptors: FreeList[Descriptor]
    max_descriptors: FreeList[Descriptor]

    def __init__(self, component: BtlComponent, name: str, attributes: ModuleAttributes) -> None:
        self.component = component
        self.name = name
        self.eager_limit = attributes.eager_limit
        self.max_send_size = attributes.max_send_size
        self.rdma_pipeline_send_length = attributes.rdma_pipeline_send_length
        self.rdma_pipeline_frag_size = attributes.rdma_pipeline_frag_size
        self.min_rdma_pipeline_size = attributes.min_rdma_pipeline_size
        self.exclusivity = attributes.exclusivity
        self.latency = attributes.latency
        self.bandwidth = attributes.bandwidth
        self.callbacks: list[RecvCallback | None] = [None] * TAG_COUNT
        self.error_callbacks: list[ErrorCallback] = []

    # -- registration -----------------------------------------------------------------------

    def register(self, tag: int, callback: RecvCallback) -> None:
        """Deliver fragments sent with ``tag`` to ``callback(module, tag, payload)``."""
        check_tag(tag)
        if self.callbacks[tag] is not None:
            raise BtlTagError(f"{self.name}: tag {tag} already has a receive callback")
        self.callbacks[tag] = callback

    def unregister(self, tag: int) -> None:
        """Forget the receive callback of ``tag``."""
        check_tag(tag)
        self.callbacks[tag] = None

    def register_error(self, callback: ErrorCallback) -> None:
        """Call ``callback(module, endpoint, error)`` when a peer becomes unreachable."""
        self.error_callbacks.append(callback)

    def report_error(self, endpoint: Endpoint | None, error: BaseException) -> None:
        """Tell every error callback; with none registered, raise so the failure is not lost."""
        if not self.error_callbacks:
            raise error
        for callback in self.error_callbacks:
            callback(self, endpoint, error)

    def no_callback(self, tag: int) -> NoReturn:
        """A fragment arrived for a tag nobody registered: a protocol error, said clearly."""
        raise BtlTagError(
            f"{self.name}: received a fragment with tag {tag}, but no receive callback is "
            f"registered for it (register it before the peers start sending)"
        )

    # -- peers ------------------------------------------------------------------------------

    @abc.abstractmethod
    def add_procs(self, procs: Sequence[Proc]) -> list[EndpointT | None]:
        """One endpoint per proc this module reaches, ``None`` for the unreachable ones."""

    @abc.abstractmethod
    def del_procs(self, procs: Sequence[Proc], endpoints: Sequence[EndpointT | None]) -> None:
        """Release what ``add_procs`` set up for these peers."""

    def unreachable_reason(self, proc: Proc) -> str:
        """Why the last ``add_procs`` gave no endpoint for ``proc``, for the BML's error message.

        The default says nothing (empty string): most modules reach a peer or plainly do not
        (another node, another job).  A network transport that tried and failed (the tcp
        BTL's probes) explains what it tried.
        """
        return ""

    # -- descriptors and sending ------------------------------------------------------------

    def setup_free_lists(self, *, initial: int = 8, maximum: int | None = None) -> None:
        """Create the two descriptor pools the default ``alloc``/``prepare_src`` use.

        Eager descriptors hold ``eager_limit`` bytes, large ones ``max_send_size``; a transport
        that needs descriptors elsewhere (in shared memory) overrides the three methods instead.
        """
        self.eager_descriptors = descriptor_free_list(
            self.eager_limit, f"{self.name} eager descriptors", initial=initial, maximum=maximum
        )
        self.max_descriptors = descriptor_free_list(
            self.max_send_size, f"{self.name} max-size descriptors", initial=0, maximum=maximum
        )

    def alloc(
        self, endpoint: EndpointT, size: int, flags: DescriptorFlags = DescriptorFlags.OWNERSHIP
    ) -> Descriptor | None:
        """A descriptor with one writable segment of ``size`` bytes; None when pools are empty."""
        if size <= self.eager_limit:
            descriptor = self.eager_descriptors.get()
        elif size <= self.max_send_size:
            descriptor = self.max_descriptors.get()
        else:
            raise BtlSizeError(
                f"{self.name}: cannot allocate a {size}-byte descriptor; the largest fragment "
                f"is max_send_size = {self.max_send_size} bytes"
            )
        if descriptor is None:
            return None
        descriptor.segments = [descriptor.view[:size]]
        descriptor.flags = flags
        return descriptor

    def free(self, descriptor: Descriptor) -> None:
        """Return a descriptor to the free list it came from."""
        home = descriptor.home
        descriptor.reset()
        if home is not None:
            home.put(descriptor)

    def sent_at_once(self, endpoint: EndpointT, descriptor: Descriptor) -> bool:
        """``send`` finished ``descriptor`` at once: tell the sender only if it asked, then free.

        Returns True, ``send``'s answer for a descriptor that completed at once.
        """
        flags = int(descriptor.flags)
        if flags & _ALWAYS_CALLBACK and descriptor.completion is not None:
            descriptor.completion(self, endpoint, descriptor, None)
        if flags & _OWNERSHIP:
            self.free(descriptor)
        return True

    def send_finished(
        self, endpoint: EndpointT, descriptor: Descriptor, error: BaseException | None = None
    ) -> None:
        """A queued ``descriptor`` left (or failed with ``error``): tell the sender, then free.

        Unlike :meth:`sent_at_once` the callback always runs: the sender is waiting for it.
        """
        if descriptor.completion is not None:
            descriptor.completion(self, endpoint, descriptor, error)
        if int(descriptor.flags) & _OWNERSHIP:
            self.free(descriptor)

    def prepare_src(
        self,
        endpoint: EndpointT,
        data: memoryview,
        reserve: int,
        flags: DescriptorFlags = DescriptorFlags.OWNERSHIP,
    ) -> Descriptor | None:
        """A descriptor with ``reserve`` header bytes followed by (a prefix of) ``data``.

        ``descriptor.data_length`` says how much of ``data`` it carries (at most
        ``max_send_size - reserve``).  Data that fits the eager limit is copied into the
        descriptor, so the caller may reuse its buffer at once; larger data is referenced, not
        copied, and must not change until the send completes.
        """
        if data.format != "B" or data.ndim != 1:
            data = data.cast("B")
        room = self.max_send_size - reserve
        if room <= 0:
            raise BtlSizeError(
                f"{self.name}: a {reserve}-byte header leaves no room in a fragment of "
                f"max_send_size = {self.max_send_size} bytes"
            )
        count = min(len(data), room)
        descriptor = self.eager_descriptors.get()
        if descriptor is None:
            return None
        view = descriptor.view
        if reserve + count <= self.eager_limit:
            view[reserve : reserve + count] = data[:count]
            descriptor.segments = [view[: reserve + count]]
        else:
            descriptor.segments = [view[:reserve], data[:count]]
        descriptor.data_length = count
        descriptor.flags = flags
        return descriptor

    @abc.abstractmethod
    def send(self, endpoint: EndpointT, descriptor: Descriptor, tag: int) -> bool:
        """Send a descriptor; True when it completed at once (see :class:`DescriptorFlags`).

        False means it is queued: the completion callback runs when it is on its way (or
        failed), and the module frees it then if it holds ``OWNERSHIP``.
        """

    def sendi(
        self, endpoint: EndpointT, header: bytes | memoryview, payload: memoryview, tag: int
    ) -> bool:
        """Send ``header + payload`` at once without a descriptor, or return False.

        False means "not now" (not connected yet, sends queued, or unsupported): the caller
        falls back to ``alloc``/``prepare_src`` + ``send``.  True means the caller may reuse
        its memory immediately.  The default always answers False.
        """
        return False

    def immediate(
        self, endpoint: EndpointT, header: struct.Struct, tag: int, limit: int
    ) -> ImmediateSend | None:
        """``endpoint``'s immediate send of records whose header has the layout ``header``, or
        None (the default) when the module has none of its own.

        The PML binds one per peer once (at ``add_comm``) and calls it for every short
        message: ``send(payload, *fields)`` does what ``sendi(endpoint, header.pack(*fields),
        payload, tag)`` does for a record of at most ``limit`` bytes (header included; larger
        ones answer False), with the same answers and errors.  Binding it once lets a module
        pack its own record header and the caller's in one step, straight into its memory
        (btl sm), instead of packing the caller's header into a separate bytes object that is
        copied again.  With None the caller packs the header and calls :meth:`sendi`.
        """
        return None

    def peer_ring(self, endpoint: EndpointT) -> PeerRing | None:
        """The ring ``endpoint``'s process writes this process's records into, for polling.

        None (the default) when the module has no such per-peer ring (tcp's stream, self's
        direct delivery, sm in its locked protocol): receivers then progress the module.
        """
        return None

    # -- RDMA -------------------------------------------------------------------------------

    def register_mem(self, buffer: memoryview) -> MemHandle:
        """Make ``buffer`` reachable by the peers' put/get; the default raises (no RDMA)."""
        raise BtlUnsupportedError(f"{self.name} does not offer put/get (its flags: {self.flags!r})")

    def deregister_mem(self, handle: MemHandle) -> None:
        """Undo :meth:`register_mem`; the default raises (no RDMA)."""
        raise BtlUnsupportedError(f"{self.name} does not offer put/get (its flags: {self.flags!r})")

    def put(
        self,
        endpoint: EndpointT,
        local: memoryview,
        remote: MemHandle,
        offset: int,
        completion: RdmaCompletion | None = None,
    ) -> None:
        """Copy ``local`` into the peer's registered region at ``offset``.

        The default raises :class:`BtlUnsupportedError`: only modules with ``BtlFlags.PUT``
        implement it.
        """
        raise BtlUnsupportedError(f"{self.name} does not offer put (its flags: {self.flags!r})")

    def get(
        self,
        endpoint: EndpointT,
        local: memoryview,
        remote: MemHandle,
        offset: int,
        completion: RdmaCompletion | None = None,
    ) -> None:
        """Copy the peer's registered region from ``offset`` into ``local``.

        The default raises :class:`BtlUnsupportedError`: only modules with ``BtlFlags.GET``
        implement it.
        """
        raise BtlUnsupportedError(f"{self.name} does not offer get (its flags: {self.flags!r})")

    # -- teardown ---------------------------------------------------------------------------

    def finalize(self) -> None:
        """Release the module's resources (sockets, buffers); called once, at the end.

        The default does nothing.
        """

    def __repr__(self) -> str:
        return f"<btl module {self.name}>"


class BtlComponent(Component[BtlContext, list[BtlModule[Any]]]):
    """Base class of BTL components.

    Subclasses set ``name``, ``version``, ``default_priority`` and ``module_defaults``, and
    implement ``query`` (an offer of a list of modules) and, if they need polling, ``progress``
    (the default handles nothing; set ``needs_progress = False`` to stay off the progress loop).
    """

    framework: ClassVar[str] = "btl"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION
    module_defaults: ClassVar[ModuleDefaults]
    #: Whether the base registers :meth:`progress` with the progress engine.
    needs_progress: ClassVar[bool] = True

    def register_params(self) -> None:
        super().register_params()
        defaults = attrs.asdict(self.module_defaults)
        for name, help_text, level in _MODULE_PARAMS:
            self.register_param(
                name,
                ParamType.INT,
                defaults[name],
                help_text,
                level=level,
                minimum=0,
            )

    def module_attributes(self) -> ModuleAttributes:
        """The module attributes in force (defaults overridden by the user's parameters)."""
        values = {name: self.param(name) for name, _help, _level in _MODULE_PARAMS}
        attributes = ModuleAttributes(**values)
        if attributes.eager_limit > attributes.max_send_size:
            raise ValueError(
                f"{self.param_name('eager_limit')} ({attributes.eager_limit}) is larger than "
                f"{self.param_name('max_send_size')} ({attributes.max_send_size}); "
                "an eager message must fit in one fragment"
            )
        return attributes

    def query(self, context: BtlContext) -> Offer[list[BtlModule[Any]]] | None:
        """Offer one module per usable resource, or ``None`` when the transport cannot run."""
        return None

    def progress(self) -> int:
        """Move this component's transports forward; return the number of events handled.

        The default handles nothing (a transport that completes everything inline).
        """
        return 0
