"""An in-process loopback PML, to test the MPI API without transports or a launcher.

:func:`make_world` builds ``size`` MPI processes inside one interpreter, each with its own
:class:`LoopbackPml`, all sharing one :class:`Fabric` that delivers a send at once (copying the
bytes) into the receiver's matching queues.  Run each rank's code in its own thread to test
blocking calls.  The matching rules are MPI's: posted receives in posting order, unexpected
messages in arrival order, ``ANY_TAG`` only matching tags >= 0, probes that do not consume,
matched probes that take the message out of matching.  Standard sends complete at once
(eager); synchronous sends complete when matched.  It is a test double: correctness of the API
layer is what it is for, not speed.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from ompy.opal.datatype.convertor import Convertor
from ompy.opal.mca.params import Registry
from ompy.opal.mca.params import registry as process_registry
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

from ..completion import CoreRequest
from ..constants import ANY_SOURCE, ANY_TAG, TAG_UB_VALUE
from ..datatype.buffer import BufferSpec
from ..errors import ERR_TRUNCATE
from ..errors import Exception as MPIException
from ..instance import Instance, adopted
from ..mca.pml.interface import PmlComm, PmlMessage, PmlModule, SendMode
from .attributes import install_predefined
from .comm import COMM_SELF, COMM_WORLD, Intracomm
from .communicator import Communicator
from .init import _installed


@attrs.define(eq=False)
class LoopbackMessage:
    """A message in flight: who sent it, its tag, a copy of its bytes and the send request."""

    source: int
    tag: int
    data: bytes
    send: CoreRequest | None  # completed at match time (synchronous sends)

    @property
    def count(self) -> int:
        return len(self.data)


class LoopbackRecv(CoreRequest):
    """A posted receive: into ``view``, or (``view`` None) into a buffer sized at match time;
    with a ``convertor`` (a non-contiguous layout) the data is unpacked through it."""

    __slots__ = ("convertor", "queue", "view", "want_source", "want_tag")

    def __init__(
        self,
        view: memoryview | None,
        source: int,
        tag: int,
        queue: MatchQueue | None,
        convertor: Convertor | None = None,
    ) -> None:
        super().__init__()
        self.view = view
        self.convertor = convertor
        self.want_source = source
        self.want_tag = tag
        self.queue = queue

    def cancel(self) -> None:
        queue = self.queue
        if queue is None:  # an imrecv: matched already
            return
        with queue.fabric.lock:
            if self.complete or self not in queue.posted:
                return
            queue.posted.remove(self)
            self.cancelled = True
            self.finish()


@attrs.define(eq=False)
class MatchQueue:
    """The matching state of one communicator in one process."""

    fabric: Fabric
    posted: list[LoopbackRecv] = attrs.field(factory=list)
    unexpected: list[LoopbackMessage] = attrs.field(factory=list)


def _matches(source: int, tag: int, want_source: int, want_tag: int) -> bool:
    if want_source not in (ANY_SOURCE, source):
        return False
    if want_tag == ANY_TAG:
        return tag >= 0
    return want_tag == tag


def _deliver(request: LoopbackRecv, message: LoopbackMessage) -> None:
    data = message.data
    if request.view is None:  # a sized receive: its buffer is made now, to the message's size
        request.view = memoryview(bytearray(len(data)))
    view = request.view
    convertor = request.convertor
    room = view.nbytes if convertor is None else convertor.packed_size
    request.source, request.tag = message.source, message.tag
    if message.send is not None:
        message.send.finish()
    if len(data) > room:
        if convertor is None:
            view[:] = data[:room]
        else:
            convertor.unpack(0, data[:room])
        request.count = room
        request.fail(
            ERR_TRUNCATE,
            MPIException(
                ERR_TRUNCATE,
                f"a message of {len(data)} bytes from rank {message.source} (tag {message.tag}) "
                f"does not fit in the receive buffer of {room} bytes",
            ),
        )
        return
    if convertor is None:
        view[: len(data)] = data
    else:
        convertor.unpack(0, data)
    request.count = len(data)
    request.finish()


_EMPTY = memoryview(b"")


def _flat(view: memoryview) -> memoryview:
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


class Fabric:
    """The shared wire of a loopback world: matching queues per (context id, world rank)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.queues: dict[tuple[int, int], MatchQueue] = {}

    def queue(self, cid: int, world_rank: int) -> MatchQueue:
        key = (cid, world_rank)
        queue = self.queues.get(key)
        if queue is None:  # a message may arrive before its communicator exists here
            queue = self.queues[key] = MatchQueue(self)
        return queue


class LoopbackPml(PmlModule):
    """The PML of one loopback process: the whole interface, eager delivery under one lock."""

    max_tag = TAG_UB_VALUE
    max_contextid = 2**31 - 1

    def __init__(self, fabric: Fabric, world_rank: int) -> None:
        self.fabric = fabric
        self.world_rank = world_rank
        self.comms: set[int] = set()
        self.finalized = False

    def add_procs(self, procs: Sequence[Proc], keys: Sequence[int]) -> None:
        """Nothing to set up: the fabric reaches every rank of the world."""

    def del_procs(self, procs: Sequence[Proc]) -> None:
        """Nothing to tear down."""

    def add_comm(self, comm: PmlComm) -> None:
        comm.pml_state = self.fabric.queue(comm.context_id, self.world_rank)
        self.comms.add(comm.context_id)

    def del_comm(self, comm: PmlComm) -> None:
        with self.fabric.lock:
            self.fabric.queues.pop((comm.context_id, self.world_rank), None)
        self.comms.discard(comm.context_id)
        comm.pml_state = None

    def isend(
        self, spec: BufferSpec, dest: int, tag: int, comm: PmlComm, mode: SendMode
    ) -> CoreRequest:
        return self.isend_view(_flat(spec.packed()), dest, tag, comm, mode)

    def isend_view(
        self, data: memoryview, dest: int, tag: int, comm: PmlComm, mode: SendMode
    ) -> CoreRequest:
        request = CoreRequest()
        synchronous = mode is SendMode.SYNCHRONOUS
        message = LoopbackMessage(comm.rank, tag, bytes(data), request if synchronous else None)
        with self.fabric.lock:
            queue = self.fabric.queue(comm.context_id, comm.remote_world_ranks[dest])
            for posted in queue.posted:
                if _matches(comm.rank, tag, posted.want_source, posted.want_tag):
                    queue.posted.remove(posted)
                    _deliver(posted, message)
                    break
            else:
                queue.unexpected.append(message)
        request.count = len(message.data)
        if not synchronous:
            request.finish()
        return request

    def irecv(self, spec: BufferSpec, source: int, tag: int, comm: PmlComm) -> LoopbackRecv:
        if spec.convertor is not None:
            return self._post(LoopbackRecv(_EMPTY, source, tag, comm.pml_state, spec.convertor))
        return self.irecv_view(_flat(spec.view), source, tag, comm)

    def irecv_view(
        self, view: memoryview | None, source: int, tag: int, comm: PmlComm
    ) -> LoopbackRecv:
        return self._post(LoopbackRecv(view, source, tag, comm.pml_state))

    def _post(self, request: LoopbackRecv) -> LoopbackRecv:
        queue = request.queue
        assert queue is not None
        source, tag = request.want_source, request.want_tag
        with self.fabric.lock:
            for index, message in enumerate(queue.unexpected):
                if _matches(message.source, message.tag, source, tag):
                    del queue.unexpected[index]
                    _deliver(request, message)
                    break
            else:
                queue.posted.append(request)
        return request

    def iprobe(self, source: int, tag: int, comm: PmlComm) -> LoopbackMessage | None:
        with self.fabric.lock:
            for message in comm.pml_state.unexpected:
                if _matches(message.source, message.tag, source, tag):
                    return message
        return None

    def improbe(self, source: int, tag: int, comm: PmlComm) -> LoopbackMessage | None:
        with self.fabric.lock:
            unexpected = comm.pml_state.unexpected
            for index, message in enumerate(unexpected):
                if _matches(message.source, message.tag, source, tag):
                    del unexpected[index]
                    return message
        return None

    def imrecv(self, spec: BufferSpec | None, message: PmlMessage) -> LoopbackRecv:
        if not isinstance(message, LoopbackMessage):
            raise TypeError(f"imrecv takes a message returned by improbe, got {message!r}")
        view = None if spec is None else _flat(spec.view)
        convertor = None if spec is None else spec.convertor
        request = LoopbackRecv(view, message.source, message.tag, None, convertor)
        with self.fabric.lock:
            _deliver(request, message)
        return request

    def progress(self) -> int:
        """Nothing to advance: every send is delivered when it starts."""
        return 0

    def finalize(self) -> None:
        """Nothing is owed to peers (delivery is immediate); only remembers it ran."""
        self.finalized = True


@attrs.frozen
class LoopbackProc:
    """The Proc-like record the loopback world gives its processes (node ids matter)."""

    rank: int
    node_id: int = 0


class AbortedError(Exception):
    """Raised by ``Comm.Abort`` in a loopback world, instead of ending the interpreter."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"abort({code}): {message}")
        self.code = code


def _abort(code: int, message: str) -> None:
    raise AbortedError(code, message)


def make_world(
    size: int,
    *,
    nodes: list[int] | None = None,
    abort: Callable[[int, str], Any] = _abort,
    registry: Registry | None = None,
) -> list[Intracomm]:
    """``size`` loopback processes; returns each one's COMM_WORLD (index = rank).

    Each rank is an independent :class:`~ompy.ompi.instance.Instance` (its own coll and op
    frameworks, opened with ``registry``, the process-wide registry by default).  ``nodes``
    gives each rank's node id (default: all on node 0), for ``Split_type``.
    """
    fabric = Fabric()
    nodes = nodes or [0] * size
    registry = registry or process_registry()
    procs = tuple(LoopbackProc(rank, nodes[rank]) for rank in range(size))
    worlds = []
    for rank in range(size):
        instance = Instance(
            pml=LoopbackPml(fabric, rank),
            engine=ProgressEngine(spin_count=0, block_max_ms=1.0),
            world_rank=rank,
            world_size=size,
            procs=procs,
            abort=abort,
            registry=registry,
        )
        world = Communicator.create(
            instance, 0, tuple(range(size)), "MPI_COMM_WORLD", predefined=True
        )
        install_predefined(world)
        worlds.append(Intracomm._of(world))
    return worlds


def run_ranks(
    worlds: list[Intracomm], body: Callable[[Intracomm], Any], timeout: float = 30
) -> list:
    """Run ``body(world)`` for every rank in its own thread; their results in rank order.

    An exception in any rank is raised here (the first by rank); a rank still running after
    ``timeout`` seconds is reported as a deadlock.
    """
    results: list[Any] = [None] * len(worlds)
    errors: list[BaseException | None] = [None] * len(worlds)

    def run(rank: int) -> None:
        try:
            results[rank] = body(worlds[rank])
        except BaseException as error:  # reported to the caller below
            errors[rank] = error

    threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in range(len(worlds))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
        if any(error is not None for error in errors):
            break  # a failed rank usually leaves its peers waiting for it
    for error in errors:
        if error is not None:
            raise error
    stuck = [rank for rank, thread in enumerate(threads) if thread.is_alive()]
    if stuck:
        raise TimeoutError(f"ranks {stuck} did not finish in {timeout} s (a deadlock?)")
    return results


@contextlib.contextmanager
def default_instance(registry: Registry | None = None) -> Iterator[Instance]:
    """A one-rank loopback instance made this interpreter's default while the block runs.

    For tests of calls that act on the default instance without a communicator
    (``Op.Reduce_local``, ``Translate_ranks`` into the world group, ...).
    """
    (world,) = make_world(1, registry=registry)
    instance = world._live("testing.default_instance").instance
    with adopted(instance):
        yield instance


@contextlib.contextmanager
def interpreter_world(registry: Registry | None = None) -> Iterator[Instance]:
    """A one-rank loopback world installed as this interpreter's MPI process
    (``MPI.COMM_WORLD``, ``MPI.COMM_SELF``, ``MPI.Finalize``) while the block runs, then the
    interpreter's MPI as it was."""
    (world,) = make_world(1, registry=registry)
    instance = world._live("testing.interpreter_world").instance
    instance.cids.clear()  # the predefined communicators take context ids 0 and 1
    with _installed(instance):
        yield instance


@contextlib.contextmanager
def no_default_instance() -> Iterator[None]:
    """No default instance (MPI not initialized) while the block runs, then this
    interpreter's MPI as it was."""
    saved = COMM_WORLD._c, COMM_SELF._c
    COMM_WORLD._c = COMM_SELF._c = None
    try:
        with adopted(None):
            yield
    finally:
        COMM_WORLD._c, COMM_SELF._c = saved
