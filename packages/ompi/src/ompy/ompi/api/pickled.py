"""The lowercase methods' transport: Python objects as pickle protocol 5 with out-of-band buffers.

An object travels as one *stream message* on the user's tag::

    header (nbufs, channel tag, stream length) | pickle stream | nbufs x buffer size

followed, when the object holds large contiguous buffers (numpy arrays, bytearrays), by one
message per buffer on a private *channel tag* (:func:`~.tags.pickle_channel`, negative, so no
user receive can take it).  The buffers go straight from the object's memory to the transport
and arrive in their own bytearrays, which ``pickle.loads`` hands back to numpy: no copy on either
side.  Small buffers stay in the stream, where one message is cheaper than two; a long stream
(a large ``bytes`` or ``str`` pickles in-band) travels as the first buffer instead of being
copied behind the header (``STREAM_FIRST`` in the header's buffer count).

Receiving: the stream's size is known only to its sender, so a receive is posted to the PML
with a buffer *sized by the message* (``irecv_view(None, ...)``): it takes its place in the
matching order at once, like any receive (a later ``Recv`` on the same source and tag cannot
overtake it), and the PML allocates the buffer when the message matches, in one step.  When the
stream has arrived (a completion callback), the buffers are received from the sender it matched
on the channel tag the header names; the channel is per message, so two objects in flight
between the same pair never exchange buffers, whatever order the receiver takes them in.  A PML
without sized receives (the interface's minimum) is served by a matched probe advanced from the
progress engine, then a receive.
"""

from __future__ import annotations

import pickle
import struct
from typing import Any, Final

from ..datatype.buffer import BufferSpec
from ..datatype.predefined import BYTE
from ..errors import ERR_OTHER
from ..errors import Exception as MPIException
from ..mca.pml.interface import SendMode
from .communicator import Communicator
from .ops import BUFFERED, STANDARD, start_send
from .tags import pickle_channel

#: Contiguous buffers at least this large travel out of band (no copy); smaller ones in-band.
OOB_THRESHOLD: Final = 16 * 1024
#: Pickle streams at least this long travel out of band too, as the first buffer: copying them
#: behind the header would cost more than the extra message.
STREAM_OOB_THRESHOLD: Final = 256 * 1024
HEADER: Final = struct.Struct("<IiQ")  # buffers (| STREAM_FIRST), channel tag, stream length
SIZE: Final = struct.Struct("<Q")
#: Flag in the header's buffer count: the stream is the first out-of-band buffer.
STREAM_FIRST: Final = 1 << 31
PROTOCOL: Final = 5


#: Types whose pickles never hold out-of-band buffers: pickled without a buffer callback.
_PLAIN: Final = frozenset({bytes, str, int, float, bool, complex, type(None)})
_dumps = pickle.dumps


def serialize(obj: Any) -> tuple[bytes, list[memoryview]]:
    """The pickle stream of ``obj`` and the large contiguous buffers that travel out of band."""
    if type(obj) in _PLAIN:
        return _dumps(obj, PROTOCOL), []
    buffers: list[memoryview] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        try:
            raw = buffer.raw()  # refuses non-contiguous buffers: those stay in-band
        except BufferError:
            return True
        if raw.nbytes < OOB_THRESHOLD:
            return True
        buffers.append(raw)
        return False

    return pickle.dumps(obj, PROTOCOL, buffer_callback=out_of_band), buffers


def frame(stream: bytes, buffers: list[memoryview], channel: int) -> memoryview:
    """The stream message: header, pickle stream, the size of each out-of-band buffer.

    An empty ``stream`` with buffers means the stream is the first buffer (a long one).
    """
    nbufs = len(buffers) | STREAM_FIRST if buffers and not stream else len(buffers)
    head = HEADER.pack(nbufs, channel, len(stream))
    if not buffers:
        return memoryview(head + stream)
    sizes = b"".join(SIZE.pack(buffer.nbytes) for buffer in buffers)
    return memoryview(b"".join((head, stream, sizes)))


class Serialized:
    """An object ready to send: its stream message (``view``) and what follows on the channel.

    ``buffers`` are the object's out-of-band buffers; ``outgoing`` the channel's messages in
    order: the same, preceded by the stream itself when it is long.
    """

    __slots__ = ("buffers", "outgoing", "stream", "view")

    def __init__(self, obj: Any) -> None:
        self._build(*serialize(obj))

    @classmethod
    def of(cls, stream: bytes, buffers: list[memoryview]) -> Serialized:
        """An object already pickled by :func:`serialize`."""
        serialized = cls.__new__(cls)
        serialized._build(stream, buffers)
        return serialized

    def _build(self, stream: bytes, buffers: list[memoryview]) -> None:
        self.stream, self.buffers = stream, buffers
        if len(self.stream) >= STREAM_OOB_THRESHOLD:
            self.outgoing = [memoryview(self.stream), *self.buffers]
        else:
            self.outgoing = self.buffers
        self.view = self._frame(0)

    def set_channel(self, channel: int) -> None:
        """Name the channel tag the buffers travel on (in a new stream message)."""
        self.view = self._frame(channel)

    def _frame(self, channel: int) -> memoryview:
        in_band = self.stream if self.outgoing is self.buffers else b""
        return frame(in_band, self.outgoing, channel)


def byte_spec(view: memoryview) -> BufferSpec:
    """A BufferSpec of raw bytes."""
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return BufferSpec(view, view.nbytes, BYTE, view)


def parse_stream(data: memoryview) -> tuple[memoryview | None, int, list[int]]:
    """(pickle stream, channel tag, buffer sizes) of a received stream message.

    The stream is None when it travels as the first buffer.
    """
    if data.nbytes < HEADER.size:
        raise MPIException(
            ERR_OTHER,
            f"a pickled message of {data.nbytes} bytes is too short for its header; was it sent "
            "with an uppercase method (Send) and received with a lowercase one (recv)?",
        )
    nbufs, channel, length = HEADER.unpack_from(data, 0)
    first = nbufs & STREAM_FIRST
    nbufs &= ~STREAM_FIRST
    end = HEADER.size + length
    if end + nbufs * SIZE.size != data.nbytes or (first and (length or not nbufs)):
        raise MPIException(
            ERR_OTHER,
            f"a pickled message of {data.nbytes} bytes does not match its header ({length} "
            f"bytes of stream, {nbufs} buffers); was it sent with an uppercase method (Send)?",
        )
    sizes = [SIZE.unpack_from(data, end + i * SIZE.size)[0] for i in range(nbufs)]
    return (None if first else data[HEADER.size : end]), channel, sizes


class PickledSend:
    """A send of an object that needed several messages (stream and buffers)."""

    __slots__ = ("_done", "parts", "serialized")

    def __init__(self, parts: list[Any], serialized: Serialized) -> None:
        self.parts = parts
        self.serialized = serialized  # keeps the stream alive until it is sent
        self._done = False

    @property
    def complete(self) -> bool:
        if not self._done:
            self._done = all(part.complete for part in self.parts)
        return self._done

    @property
    def exception(self) -> BaseException | None:
        return next((p.exception for p in self.parts if p.exception is not None), None)

    @property
    def error(self) -> int:
        return next((p.error for p in self.parts if p.error), 0)

    source = property(lambda self: self.parts[0].source)
    tag = property(lambda self: self.parts[0].tag)
    count = property(lambda self: self.parts[0].count)
    cancelled = property(lambda self: False)
    result = None

    def cancel(self) -> None:
        """Sends of objects are not cancelled (MPI lets a cancel fail)."""


def send_object(
    comm: Communicator, obj: Any, dest: int, tag: int, mode: SendMode, *, call: str
) -> Any:
    """Start a blocking send of ``obj``: None if it already left, else the request to wait on."""
    stream, buffers = serialize(obj)
    if mode is STANDARD and not buffers and len(stream) < STREAM_OOB_THRESHOLD:
        try:  # one message: the common case
            send_view = comm.pml.send_view
        except AttributeError:  # a PML with only the interface's isend
            pass
        else:
            return send_view(frame(stream, buffers, 0), dest, tag, comm)
    return _start(comm, Serialized.of(stream, buffers), dest, tag, mode, call=call)


def start_object_send(
    comm: Communicator, obj: Any, dest: int, tag: int, mode: SendMode, *, call: str
) -> Any:
    """Serialize ``obj`` and start sending it (``dest``, ``tag`` already checked)."""
    return _start(comm, Serialized(obj), dest, tag, mode, call=call)


def _start(
    comm: Communicator, serialized: Serialized, dest: int, tag: int, mode: SendMode, *, call: str
) -> Any:
    if not serialized.outgoing:
        return start_send(comm, byte_spec(serialized.view), dest, tag, mode, call=call)
    with comm.engine.lock:  # the channel counter (THREAD_MULTIPLE: two threads send objects)
        counter = comm.channels.get(dest, 0)
        comm.channels[dest] = counter + 1
    channel = pickle_channel(counter)
    serialized.set_channel(channel)
    parts = [start_send(comm, byte_spec(serialized.view), dest, tag, mode, call=call)]
    buffer_mode = BUFFERED if mode is BUFFERED else STANDARD
    for buffer in serialized.outgoing:
        parts.append(start_send(comm, byte_spec(buffer), dest, channel, buffer_mode, call=call))
    return PickledSend(parts, serialized)


class PickledRecv:
    """A receive of an object: its stream message (sized by the PML at match), then its buffers.

    The buffers' receives are posted from the stream's completion callback, so the receive
    advances whenever the process progresses, whatever it waits for (a synchronous send to a
    peer that is itself waiting for this receive's buffers completes).  Unpickling runs no
    user code inside the PML's callbacks: it happens when the program next looks at
    ``complete`` (every wait does).  Errors are kept and raised by the wait, like any failed
    receive.
    """

    __slots__ = (
        "_buffers",
        "_data",
        "_done",
        "_left",
        "_parts",
        "_stream",
        "cancelled",
        "comm",
        "count",
        "error",
        "exception",
        "result",
        "source",
        "tag",
    )

    def __init__(self, comm: Communicator, source: int, tag: int, message: Any = None) -> None:
        self.comm = comm
        self.source = source
        self.tag = tag
        self.count = 0
        self.error = 0
        self.exception: BaseException | None = None
        self.cancelled = False
        self.result: Any = None
        self._done = False
        #: The stream's buffer when this side sized it; the pickle stream once it arrived.
        self._data: memoryview | None = None
        self._parts: list[Any] = []
        self._buffers: list[bytearray] = []
        self._left = -1  # buffers still to arrive; -1 while the stream has not
        pml = comm.pml
        # Under the MPI lock with THREAD_MULTIPLE: another thread's progress could complete
        # the stream between the test of ``complete`` and the setting of ``on_complete``.
        # Below it no lock is taken: this is the hot path of every ``recv``.
        engine = comm.engine
        threaded = engine.threaded
        if threaded:
            engine.lock.acquire()
        try:
            if message is not None:  # matched by Mprobe: its size is known
                self._data = memoryview(bytearray(message.count))
                stream = pml.imrecv(byte_spec(self._data), message)
            else:
                try:
                    irecv_view = pml.irecv_view
                except AttributeError:  # a PML without receives sized by the message
                    stream = ProbedRecv(comm, source, tag)
                else:
                    stream = irecv_view(None, source, tag, comm)
            self._stream = stream
            if stream.complete:
                self._stream_done(stream)
            else:
                stream.on_complete = self._stream_done
        finally:
            if threaded:
                engine.lock.release()

    @property
    def complete(self) -> bool:
        if not self._done and not self._left:
            try:
                stream_view = self._data
                buffers = self._buffers
                if stream_view is None:  # the stream came first among the buffers
                    stream_view, buffers = buffers[0], buffers[1:]
                self.result = pickle.loads(stream_view, buffers=buffers)
            except BaseException as error:  # reported by the wait, like any failed receive
                self._fail(error)
            else:
                self._data = None
                self._parts = []
                self._buffers = []
                self._done = True
        return self._done

    def cancel(self) -> None:
        """Cancel while the stream has not matched; afterwards the receive completes normally."""
        if not self._done:
            self._stream.cancel()

    def _stream_done(self, stream: Any) -> None:
        try:
            self.source, self.tag, self.count = stream.source, stream.tag, stream.count
            if stream.cancelled:
                self.cancelled = True
                self._done = True
                return
            if stream.exception is not None:
                raise stream.exception
            data = self._data if self._data is not None else stream.view
            self._data, channel, sizes = parse_stream(data)  # keeps the pickle stream only
            self._left = len(sizes)
            pml, comm = self.comm.pml, self.comm
            for size in sizes:
                buffer = bytearray(size)
                self._buffers.append(buffer)
                self._parts.append(
                    pml.irecv(byte_spec(memoryview(buffer)), stream.source, channel, comm)
                )
            for part in self._parts:
                if part.complete:
                    self._part_done(part)
                else:
                    part.on_complete = self._part_done
        except BaseException as error:  # reported by the wait, like any failed receive
            self._fail(error)

    def _part_done(self, part: Any) -> None:
        if self._done:
            return
        try:
            if part.exception is not None:
                raise part.exception
            self._left -= 1
        except BaseException as error:
            self._fail(error)

    def _fail(self, error: BaseException) -> None:
        self.exception = error
        self.error = getattr(error, "error_class", ERR_OTHER)
        self._data = None
        self._done = True


class ProbedRecv:
    """A receive sized by its message for a PML that cannot size one: matched probe, then imrecv.

    The instance advances it from a progress callback
    (:meth:`~ompy.ompi.instance.Instance.track_pickled`) so that it matches while the program
    waits for anything; it completes like a request (``on_complete`` runs once) and its
    ``view`` holds the message.
    """

    __slots__ = (
        "_inner",
        "cancelled",
        "comm",
        "complete",
        "count",
        "error",
        "exception",
        "on_complete",
        "source",
        "tag",
        "view",
        "want_source",
        "want_tag",
    )

    def __init__(self, comm: Communicator, source: int, tag: int) -> None:
        self.comm = comm
        self.want_source = source
        self.want_tag = tag
        self.source = source
        self.tag = tag
        self.count = 0
        self.error = 0
        self.exception: BaseException | None = None
        self.cancelled = False
        self.complete = False
        self.on_complete: Any = None
        self.view: memoryview | None = None
        self._inner: Any = None
        comm.instance.track_pickled(self)

    @property
    def done(self) -> bool:
        return self.complete

    def cancel(self) -> None:
        if self._inner is None and not self.complete:
            self.cancelled = True
            self._finish()

    def step(self) -> None:
        """Match the message if it arrived; complete once it is received."""
        if self.complete:
            return
        try:
            if self._inner is None:
                message = self.comm.pml.improbe(self.want_source, self.want_tag, self.comm)
                if message is None:
                    return
                self.view = memoryview(bytearray(message.count))
                self._inner = self.comm.pml.imrecv(byte_spec(self.view), message)
            inner = self._inner
            if not inner.complete:
                return
            self.source, self.tag, self.count = inner.source, inner.tag, inner.count
            self.exception, self.error = inner.exception, inner.error
        except BaseException as error:
            self.exception = error
            self.error = getattr(error, "error_class", ERR_OTHER)
        self._finish()

    def _finish(self) -> None:
        self.complete = True
        callback = self.on_complete
        if callback is not None:
            self.on_complete = None
            callback(self)
