"""Objects of any size over point-to-point and collectives: mpi4py's ``mpi4py.util.pkl5``.

Why a second way to send objects: an object is pickled with protocol 5, and what pickle hands
out of band (numpy arrays, ``PickleBuffer``\\ s) is sent as messages of its own, straight from
the object's memory, so no byte of a large array is copied into a pickle stream and no single
message has to carry the whole object.  The wrappers :class:`Comm`, :class:`Intracomm` and
:class:`Intercomm` have the lowercase methods of ``MPI.Comm`` with this transport; matched probes
give a :class:`Message` (one ``MPI.Message`` per part), nonblocking calls a :class:`Request`
(one ``MPI.Request`` per part).

The wire format of one object sent to one peer, all on the caller's tag:

1. a *frame*: ``int64`` lengths, that of the pickle stream first, then one per out-of-band
   buffer (so the receiver learns the number of parts from the frame's element count);
2. the pickle stream, as bytes;
3. each out-of-band buffer, as bytes, in order.

Concurrency: the parts of two objects must not interleave, so sends on a communicator are
serialised by a lock per communicator (and receives by another: a receive takes the frame and
then the parts from the frame's source and tag).  Collectives run on a private duplicate of the
communicator (made at the first collective call, freed with the communicator), so their parts
never meet a program's own messages.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import numpy as np

from ompy import MPI
from ompy.MPI import ANY_SOURCE, ANY_TAG, PROC_NULL, ROOT, Status
from ompy.ompi.datatype.predefined import BYTE, INT64_T
from ompy.ompi.errors import ERR_REQUEST, ERR_ROOT
from ompy.ompi.instance import current

__all__ = ["Comm", "Intercomm", "Intracomm", "Message", "Request"]

#: The codec: pickle protocol 5 with out-of-band buffers.
pickle = MPI.Pickle()

_FRAME_TYPE = INT64_T
#: The tag of the collectives' messages on the private duplicate (which carries nothing else).
_COLL_TAG = 0
#: The key of this module's per-process state in ``Instance.helpers``.
_STATE_KEY = "ompy.util.pkl5"

Parts = tuple[Any, list[Any]]  # (pickle stream, out-of-band buffers)
Send = Callable[[MPI.Comm, Any, int, int], None]
Recv = Callable[[MPI.Comm, Any, int, int], None]


# -- per-communicator state ------------------------------------------------------------------


@attrs.define
class _CommState:
    """What pkl5 keeps on one communicator (as an attribute, freed with it)."""

    send_lock: threading.Lock = attrs.field(factory=threading.Lock)
    recv_lock: threading.Lock = attrs.field(factory=threading.Lock)
    #: The private duplicate for collectives, and an intercommunicator's local group.
    coll: MPI.Comm | None = None
    local: MPI.Intracomm | None = None

    def free(self) -> None:
        for comm in (self.local, self.coll):
            if comm is not None:
                comm.Free()
        self.local = self.coll = None


@attrs.define
class _ProcessState:
    """The keyval under which each communicator's :class:`_CommState` is cached."""

    keyval: int
    lock: threading.Lock = attrs.field(factory=threading.Lock)


def _delete_state(comm: MPI.Comm, keyval: int, state: _CommState) -> None:
    state.free()


def _process_state() -> _ProcessState:
    instance = current("ompy.util.pkl5")
    helpers = instance.helpers
    state = helpers.get(_STATE_KEY)
    if state is None:
        state = helpers.setdefault(
            _STATE_KEY, _ProcessState(MPI.Comm.Create_keyval(delete_fn=_delete_state))
        )
    return state


def _state(comm: MPI.Comm) -> _CommState:
    process = _process_state()
    state = MPI.Comm.Get_attr(comm, process.keyval)
    if state is None:
        with process.lock:
            state = MPI.Comm.Get_attr(comm, process.keyval)
            if state is None:
                state = _CommState()
                MPI.Comm.Set_attr(comm, process.keyval, state)
    assert isinstance(state, _CommState)
    return state


def _collective_comm(comm: MPI.Comm) -> tuple[Any, MPI.Intracomm | None]:
    """The private duplicate (and an intercommunicator's local group); collective at first use."""
    state = _state(comm)
    if state.coll is None:
        coll = comm.Dup()  # (not MPI.Comm.Dup: ompy dups an Intercomm with its own method)
        local = None
        if coll.Is_inter():
            local = MPI.Intracomm.Create_from_group(coll.Get_group(), "ompy.util.pkl5.local")
        state.coll, state.local = coll, local
    return state.coll, state.local


# -- frames ----------------------------------------------------------------------------------


def _frame_of(parts: Parts) -> np.ndarray:
    data, bufs = parts
    return np.array([len(data), *(len(memoryview(b).cast("B")) for b in bufs)], dtype=np.int64)


def _as_bytes(buf: Any) -> memoryview:
    view = memoryview(buf)
    if not view.contiguous:
        raise BufferError("pkl5: an out-of-band buffer is not contiguous")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def _spec(buf: Any) -> list[Any]:
    view = _as_bytes(buf)
    return [view, view.nbytes, BYTE]


def _allocate(lengths: Iterable[int]) -> list[Any]:
    return [MPI.buffer.allocate(int(n)) for n in lengths]


def _loads(parts: Parts) -> Any:
    data, bufs = parts
    return pickle.loads_oob(data, bufs)


def _send_parts(comm: MPI.Comm, send: Send, parts: Parts, dest: int, tag: int) -> None:
    """Send one object's frame and parts (the caller holds the send lock if it needs one)."""
    data, bufs = parts
    send(comm, [_frame_of(parts), _FRAME_TYPE], dest, tag)
    send(comm, _spec(data), dest, tag)
    for buf in bufs:
        send(comm, _spec(buf), dest, tag)


def _recv_parts(  # noqa: PLR0917 (the arguments of a receive)
    comm: MPI.Comm, recv: Recv, buf: Any, source: int, tag: int, status: Status | None
) -> Parts:
    """Receive one object's frame and parts from whoever sent the first matching frame."""
    status = Status() if status is None else status
    MPI.Comm.Probe(comm, source, tag, status)
    source, tag = status.Get_source(), status.Get_tag()
    frame = np.empty(status.Get_elements(_FRAME_TYPE), dtype=np.int64)
    MPI.Comm.Recv(comm, [frame, _FRAME_TYPE], source, tag)
    data = None
    if buf is not None:  # the caller's buffer serves the pickle stream if it is large enough
        view = _as_bytes(buf)
        if view.nbytes >= frame[0]:
            data = view[: int(frame[0])]
    if data is None:
        data = _allocate(frame[:1])[0]
    bufs = _allocate(frame[1:])
    for part in (data, *bufs):
        recv(comm, _spec(part), source, tag)
    status.Set_elements(BYTE, int(frame.sum()))
    return data, bufs


# -- point to point --------------------------------------------------------------------------


def _send(comm: MPI.Comm, send: Send, obj: Any, dest: int, tag: int) -> None:
    if dest == PROC_NULL:
        send(comm, [None, 0, BYTE], dest, tag)
        return
    parts = pickle.dumps_oob(obj)
    with _state(comm).send_lock:
        _send_parts(comm, send, parts, dest, tag)


def _isend(
    comm: MPI.Comm, isend: Callable[..., MPI.Request], obj: Any, dest: int, tag: int
) -> Request:
    requests: list[MPI.Request] = []

    def send(comm: MPI.Comm, buf: Any, dest: int, tag: int) -> None:
        requests.append(isend(comm, buf, dest, tag))

    _send(comm, send, obj, dest, tag)
    return Request(requests)


def _recv(comm: MPI.Comm, buf: Any, source: int, tag: int, status: Status | None) -> Any:
    if source == PROC_NULL:
        MPI.Comm.Recv(comm, [None, 0, BYTE], source, tag, status)
        return None
    with _state(comm).recv_lock:
        parts = _recv_parts(comm, MPI.Comm.Recv, buf, source, tag, status)
    return _loads(parts)


def _mprobe(
    comm: MPI.Comm,
    probe: Callable[..., MPI.Message | None],
    source: int,
    tag: int,
    status: Status | None,
) -> Message | None:
    if source == PROC_NULL:
        return Message(MPI.Comm.Mprobe(comm, source, tag, status))
    status = Status() if status is None else status
    with _state(comm).recv_lock:
        first = probe(comm, source, tag, status)
        if first is None:
            return None
        source, tag = status.Get_source(), status.Get_tag()
        messages = [first]
        nbytes = 0
        for _ in range(status.Get_elements(_FRAME_TYPE)):
            messages.append(MPI.Comm.Mprobe(comm, source, tag, status))
            nbytes += status.Get_elements(BYTE)
        status.Set_elements(BYTE, nbytes)
        return Message(messages)


def _matched_parts(
    message: Sequence[MPI.Message],
    receive: Callable[[MPI.Message, Any], None],
    status: Status | None,
) -> Parts:
    head = message[0]
    if head == MPI.MESSAGE_NO_PROC:
        MPI.Message.Recv(head, [None, 0, BYTE], status)
        return pickle.dumps_oob(None)
    if head == MPI.MESSAGE_NULL:
        raise MPI.Exception(ERR_REQUEST)
    frame = np.empty(len(message) - 1, dtype=np.int64)
    MPI.Message.Recv(head, [frame, _FRAME_TYPE], status)
    data, *bufs = _allocate(frame)
    for part_message, part in zip(message[1:], (data, *bufs), strict=True):
        receive(part_message, _spec(part))
    if status is not None:
        status.Set_elements(BYTE, int(frame.sum()))
    return data, bufs


# -- collectives -----------------------------------------------------------------------------


def _bcast_tree(comm: MPI.Comm, parts: Parts | None, root: int) -> Parts:
    """Broadcast one object's parts over an intracommunicator (``parts`` at the root).

    A binomial tree of point-to-point messages rather than ``Bcast`` of each part: the parts
    are then sent from the object's own (possibly read-only) memory, and every rank learns the
    sizes from its parent's frame, as a receive does.
    """
    size, rank = comm.Get_size(), comm.Get_rank()
    relative = (rank - root) % size
    if relative:
        parent = relative & (relative - 1)  # clear the lowest set bit
        parts = _recv_parts(comm, MPI.Comm.Recv, None, (parent + root) % size, _COLL_TAG, None)
    assert parts is not None
    requests: list[MPI.Request] = []

    def isend(comm: MPI.Comm, buf: Any, dest: int, tag: int) -> None:
        requests.append(MPI.Comm.Isend(comm, buf, dest, tag))

    bit = 1
    while bit < size and not relative & bit:  # children: relative + each lower power of two
        if relative + bit < size:
            _send_parts(comm, isend, parts, (relative + bit + root) % size, _COLL_TAG)
        bit <<= 1
    MPI.Request.Waitall(requests)
    return parts


def _bad_root(root: int) -> MPI.Exception:
    """MPI's error for a root that names no rank (mpi4py's pkl5 raises ``ERR_ROOT`` too)."""
    return MPI.Exception(ERR_ROOT)


def _bcast(comm: MPI.Comm, obj: Any, root: int) -> Any:
    coll, local = _collective_comm(comm)
    if local is None:
        if not 0 <= root < coll.Get_size():
            raise _bad_root(root)
        mine = pickle.dumps_oob(obj) if coll.Get_rank() == root else None
        return _loads(_bcast_tree(coll, mine, root))
    if root == PROC_NULL:
        return None
    if root == ROOT:
        _send_parts(coll, MPI.Comm.Send, pickle.dumps_oob(obj), 0, _COLL_TAG)
        return None
    if not 0 <= root < coll.Get_remote_size():
        raise _bad_root(root)
    received = None
    if local.Get_rank() == 0:
        received = _recv_parts(coll, MPI.Comm.Recv, None, root, _COLL_TAG, None)
    return _loads(_bcast_tree(local, received, 0))


@attrs.define
class _Exchange:
    """The point-to-point plan of one rooted or all-to-all collective on the private comm."""

    comm: MPI.Comm
    size: int  # the number of peers (the remote size on an intercommunicator)
    sends: bool
    receives: bool
    requests: list[MPI.Request] = attrs.field(factory=list)

    @classmethod
    def rooted(cls, comm: MPI.Comm, root: int, *, to_root: bool) -> _Exchange:
        """The plan of a gather (``to_root``) or scatter: who sends and who receives."""
        coll, _ = _collective_comm(comm)
        if coll.Is_inter():
            size = coll.Get_remote_size()
            if root == PROC_NULL:  # a rank of the root's group other than the root
                return cls(coll, size, sends=False, receives=False)
            if root == ROOT:  # the root itself: the remote group is its peers
                return cls(coll, size, sends=not to_root, receives=to_root)
            if not 0 <= root < size:
                raise _bad_root(root)
            return cls(coll, size, sends=to_root, receives=not to_root)
        size = coll.Get_size()
        if not 0 <= root < size:
            raise _bad_root(root)
        at_root = coll.Get_rank() == root
        return cls(coll, size, sends=to_root or at_root, receives=not to_root or at_root)

    @classmethod
    def everyone(cls, comm: MPI.Comm) -> _Exchange:
        coll, _ = _collective_comm(comm)
        size = coll.Get_remote_size() if coll.Is_inter() else coll.Get_size()
        return cls(coll, size, True, True)

    def send(self, obj: Any, dest: int) -> None:
        def isend(comm: MPI.Comm, buf: Any, dest: int, tag: int) -> None:
            self.requests.append(MPI.Comm.Isend(comm, buf, dest, tag))

        _send_parts(self.comm, isend, pickle.dumps_oob(obj), dest, _COLL_TAG)

    def recv(self, source: int) -> Any:
        return _loads(_recv_parts(self.comm, MPI.Comm.Recv, None, source, _COLL_TAG, None))

    def finish(self) -> None:
        MPI.Request.Waitall(self.requests)


def _items(objs: Any, size: int) -> list[Any]:
    items = [None] * size if objs is None else list(objs)
    if len(items) != size:
        raise ValueError(f"pkl5: expecting {size} items, got {len(items)}")
    return items


def _gather(comm: MPI.Comm, obj: Any, root: int) -> list[Any] | None:
    plan = _Exchange.rooted(comm, root, to_root=True)
    if plan.sends:
        plan.send(obj, root)
    objs = [plan.recv(source) for source in range(plan.size)] if plan.receives else None
    plan.finish()
    return objs


def _scatter(comm: MPI.Comm, objs: Any, root: int) -> Any:
    plan = _Exchange.rooted(comm, root, to_root=False)
    if plan.sends:
        for dest, item in enumerate(_items(objs, plan.size)):
            plan.send(item, dest)
    obj = plan.recv(root) if plan.receives else None
    plan.finish()
    return obj


def _allgather(comm: MPI.Comm, obj: Any) -> list[Any]:
    plan = _Exchange.everyone(comm)
    for dest in range(plan.size):
        plan.send(obj, dest)
    objs = [plan.recv(source) for source in range(plan.size)]
    plan.finish()
    return objs


def _alltoall(comm: MPI.Comm, objs: Any) -> list[Any]:
    plan = _Exchange.everyone(comm)
    for dest, item in enumerate(_items(objs, plan.size)):
        plan.send(item, dest)
    received = [plan.recv(source) for source in range(plan.size)]
    plan.finish()
    return received


# -- requests and messages -------------------------------------------------------------------


class _Handles(tuple):
    """The MPI handles of a pkl5 operation's parts, compared as mpi4py's pkl5 does: equal to
    another of the same kind with the same parts, or to one MPI handle all its parts equal."""

    #: The MPI handle class of the parts (``MPI.Request``, ``MPI.Message``).
    _part: type

    def __eq__(self, other: object) -> bool:
        if isinstance(other, type(self)):
            return tuple(self) == tuple(other)
        if isinstance(other, self._part):
            return all(part == other for part in self)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = tuple.__hash__

    def __bool__(self) -> bool:
        return any(self)


class Request(_Handles, tuple[MPI.Request, ...]):
    """A nonblocking pkl5 operation: the ``MPI.Request`` of each of its parts.

    A request from :meth:`Message.irecv` also holds the buffers being received into, and
    ``wait``/``test`` give the object once every part has arrived.
    """

    _part = MPI.Request
    _parts: Parts | None

    def __new__(cls, request: MPI.Request | Iterable[MPI.Request] | None = None) -> Request:
        if request is None:
            request = (MPI.REQUEST_NULL,)
        elif isinstance(request, MPI.Request):
            request = (request,)
        self = super().__new__(cls, request)
        self._parts = None
        return self

    def _result(self) -> Any:
        parts, self._parts = self._parts, None
        return None if parts is None else _loads(parts)

    def Free(self) -> None:
        """Free every part's request."""
        for part in self:
            part.Free()

    def free(self) -> None:
        """Free every part's request."""
        for part in self:
            part.free()

    def cancel(self) -> None:
        """Cancel every part's request."""
        for part in self:
            part.Cancel()

    def get_status(self, status: Status | None = None) -> bool:
        """Whether every part is complete (without completing them); status of the first."""
        statuses = [status, *([None] * (len(self) - 1))]
        return all([MPI.Request.Get_status(r, s) for r, s in zip(self, statuses, strict=True)])

    def test(self, status: Status | None = None) -> tuple[bool, Any]:
        """Complete the request if every part is complete: ``(flag, object or None)``."""
        statuses = None if status is None else [status] * len(self)
        if MPI.Request.Testall(list(self), statuses):
            return True, self._result()
        return False, None

    def wait(self, status: Status | None = None) -> Any:
        """Wait for every part; the received object (None for a send)."""
        MPI.Request.Waitall(list(self), None if status is None else [status] * len(self))
        return self._result()

    @classmethod
    def get_status_all(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> bool:
        """Whether every request is complete (without completing them)."""
        if statuses is None:
            return all([request.get_status() for request in requests])
        statuses.extend(Status() for _ in range(len(statuses), len(requests)))
        return all([r.get_status(s) for r, s in zip(requests, statuses, strict=False)])

    @classmethod
    def _flat(
        cls, requests: Sequence[Request], statuses: list[Status] | None
    ) -> tuple[list[MPI.Request], list[Status] | None]:
        flat = [part for request in requests for part in request]
        if statuses is None:
            return flat, None
        statuses.extend(Status() for _ in range(len(statuses), len(requests)))
        return flat, [s for r, s in zip(requests, statuses, strict=False) for _ in r]

    @classmethod
    def testall(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> tuple[bool, list[Any] | None]:
        """Complete every request if all are complete: ``(flag, objects or None)``."""
        flat, flat_statuses = cls._flat(requests, statuses)
        if MPI.Request.Testall(flat, flat_statuses):
            return True, [request._result() for request in requests]
        return False, None

    @classmethod
    def waitall(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> list[Any]:
        """Wait for every request; the received objects (None for sends)."""
        flat, flat_statuses = cls._flat(requests, statuses)
        MPI.Request.Waitall(flat, flat_statuses)
        return [request._result() for request in requests]


class Message(_Handles, tuple[MPI.Message, ...]):
    """A matched pkl5 message: the ``MPI.Message`` of its frame and of each part."""

    _part = MPI.Message

    def __new__(cls, message: MPI.Message | Iterable[MPI.Message] | None = None) -> Message:
        if message is None:
            message = (MPI.MESSAGE_NULL,)
        elif isinstance(message, MPI.Message):
            message = (message,)
        return super().__new__(cls, message)

    def free(self) -> None:
        """Release the matched messages (nothing to do for MPI messages; kept for mpi4py)."""
        for part in self:
            part.free()

    def recv(self, status: Status | None = None) -> Any:
        """Receive the matched object."""
        return _loads(_matched_parts(self, MPI.Message.Recv, status))

    def irecv(self) -> Request:
        """Start receiving the matched object; the request's ``wait`` gives it."""
        requests: list[MPI.Request] = []

        def receive(message: MPI.Message, buf: Any) -> None:
            requests.append(MPI.Message.Irecv(message, buf))

        parts = _matched_parts(self, receive, None)
        request = Request(requests or [MPI.REQUEST_NULL])
        request._parts = parts
        return request

    @classmethod
    def probe(
        cls,
        comm: MPI.Comm,
        source: int = ANY_SOURCE,
        tag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Message:
        """Wait for a matching object and match it."""
        message = _mprobe(comm, MPI.Comm.Mprobe, source, tag, status)
        assert message is not None  # a blocking probe always matches
        return message

    @classmethod
    def iprobe(
        cls,
        comm: MPI.Comm,
        source: int = ANY_SOURCE,
        tag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Message | None:
        """Match an object if one is there (None if not)."""
        return _mprobe(comm, MPI.Comm.Improbe, source, tag, status)


# -- communicators ---------------------------------------------------------------------------


class Comm(MPI.Comm):
    """A communicator whose lowercase methods send objects with pkl5's transport."""

    def __new__(cls, comm: MPI.Comm | None = None) -> Comm:
        return MPI.Comm.__new__(cls, comm)

    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Send in standard mode."""
        _send(self, MPI.Comm.Send, obj, dest, tag)

    def bsend(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Send in buffered mode."""
        _send(self, MPI.Comm.Bsend, obj, dest, tag)

    def ssend(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Send in synchronous mode (returns once the receiver has matched every part)."""
        _isend(self, MPI.Comm.Issend, obj, dest, tag).wait()

    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:  # type: ignore[override]
        """Start a send in standard mode."""
        return _isend(self, MPI.Comm.Isend, obj, dest, tag)

    def ibsend(self, obj: Any, dest: int, tag: int = 0) -> Request:  # type: ignore[override]
        """Start a send in buffered mode."""
        return _isend(self, MPI.Comm.Ibsend, obj, dest, tag)

    def issend(self, obj: Any, dest: int, tag: int = 0) -> Request:  # type: ignore[override]
        """Start a send in synchronous mode."""
        return _isend(self, MPI.Comm.Issend, obj, dest, tag)

    def recv(
        self,
        buf: Any = None,
        source: int = ANY_SOURCE,
        tag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Any:
        """Receive an object (``buf``, if large enough, holds its pickle stream)."""
        return _recv(self, buf, source, tag, status)

    def irecv(  # type: ignore[override]
        self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG
    ) -> Request:
        """Not available: the parts' sizes are known only once the frame arrived.

        Use ``improbe``/``mprobe`` and then ``Message.irecv`` (mpi4py's pkl5 raises too).
        """
        raise RuntimeError(
            "pkl5.Comm.irecv is unsupported: use comm.mprobe() or comm.improbe(), "
            "then Message.irecv()"
        )

    def sendrecv(  # noqa: PLR0917 (mpi4py's signature)
        self,
        sendobj: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Any:
        """Send an object and receive one."""
        request = _isend(self, MPI.Comm.Isend, sendobj, dest, sendtag)
        obj = _recv(self, recvbuf, source, recvtag, status)
        request.wait()
        return obj

    def mprobe(  # type: ignore[override]
        self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Message:
        """Wait for a matching object and match it."""
        return Message.probe(self, source, tag, status)

    def improbe(  # type: ignore[override]
        self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Message | None:
        """Match an object if one is there (None if not)."""
        return Message.iprobe(self, source, tag, status)

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """Broadcast an object from ``root``."""
        return _bcast(self, obj, root)

    def gather(self, sendobj: Any, root: int = 0) -> list[Any] | None:
        """Gather one object per rank at ``root``."""
        return _gather(self, sendobj, root)

    def scatter(self, sendobj: Any, root: int = 0) -> Any:
        """Scatter one object to each rank from ``root``."""
        return _scatter(self, sendobj, root)

    def allgather(self, sendobj: Any) -> list[Any]:
        """Gather one object per rank, at every rank."""
        return _allgather(self, sendobj)

    def alltoall(self, sendobj: Any) -> list[Any]:
        """Send one object to each rank and receive one from each."""
        return _alltoall(self, sendobj)


class Intracomm(Comm, MPI.Intracomm):  # type: ignore[misc]
    """An intracommunicator with pkl5's object transport."""


class Intercomm(Comm, MPI.Intercomm):  # type: ignore[misc]
    """An intercommunicator with pkl5's object transport."""
