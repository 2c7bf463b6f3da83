"""The lowercase methods' transport: Python objects as pickle protocol 5 with out-of-band buffers.

An object travels as one *stream message* on the user's tag::

    header (nbufs, channel tag, stream length) | pickle stream | nbufs x buffer size

followed, when the object holds large contiguous buffers (numpy arrays, bytearrays), by one
message per buffer on a private *channel tag* (:func:`~.tags.pickle_channel`, negative, so no
user receive can take it).  The buffers go straight from the object's memory to the transport
and arrive in their own bytearrays, which ``pickle.loads`` hands back to numpy: no copy on either
side.  Small buffers stay in the stream, where one message is cheaper than two.

Receiving needs the stream's size, so a receive first matches the stream message with a matched
probe (which works with ``ANY_SOURCE`` and ``ANY_TAG``), receives it, then receives the buffers
from the sender it matched on the channel tag the header names.  The channel is per message,
so two objects in flight between the same pair never exchange buffers, whatever order the
receiver takes them in.
"""

from __future__ import annotations

import io
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
HEADER: Final = struct.Struct("<IiQ")  # buffers, channel tag, stream length
SIZE: Final = struct.Struct("<Q")
_PLACEHOLDER: Final = bytes(HEADER.size)
PROTOCOL: Final = 5


class Serialized:
    """An object ready to send: the stream message and its out-of-band buffers."""

    __slots__ = ("buffers", "stream", "view")

    def __init__(self, obj: Any) -> None:
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

        stream = io.BytesIO()
        stream.write(_PLACEHOLDER)
        pickle.Pickler(stream, PROTOCOL, buffer_callback=out_of_band).dump(obj)
        length = stream.tell() - HEADER.size
        for buffer in buffers:
            stream.write(SIZE.pack(buffer.nbytes))
        self.stream = stream
        self.view = stream.getbuffer()
        self.buffers = buffers
        HEADER.pack_into(self.view, 0, len(buffers), 0, length)

    def set_channel(self, channel: int) -> None:
        nbufs, _, length = HEADER.unpack_from(self.view, 0)
        HEADER.pack_into(self.view, 0, nbufs, channel, length)


def byte_spec(view: memoryview) -> BufferSpec:
    """A BufferSpec of raw bytes."""
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return BufferSpec(view, view.nbytes, BYTE, view)


def parse_stream(data: memoryview) -> tuple[memoryview, int, list[int]]:
    """(pickle stream, channel tag, buffer sizes) of a received stream message."""
    if data.nbytes < HEADER.size:
        raise MPIException(
            ERR_OTHER,
            f"a pickled message of {data.nbytes} bytes is too short for its header; was it sent "
            "with an uppercase method (Send) and received with a lowercase one (recv)?",
        )
    nbufs, channel, length = HEADER.unpack_from(data, 0)
    end = HEADER.size + length
    if end + nbufs * SIZE.size != data.nbytes:
        raise MPIException(
            ERR_OTHER,
            f"a pickled message of {data.nbytes} bytes does not match its header ({length} "
            f"bytes of stream, {nbufs} buffers); was it sent with an uppercase method (Send)?",
        )
    sizes = [SIZE.unpack_from(data, end + i * SIZE.size)[0] for i in range(nbufs)]
    return data[HEADER.size : end], channel, sizes


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


def start_object_send(
    comm: Communicator, obj: Any, dest: int, tag: int, mode: SendMode, *, call: str
) -> Any:
    """Serialize ``obj`` and start sending it (``dest``, ``tag`` already checked)."""
    serialized = Serialized(obj)
    if not serialized.buffers:
        return start_send(comm, byte_spec(serialized.view), dest, tag, mode, call=call)
    counter = comm.channels.get(dest, 0)
    comm.channels[dest] = counter + 1
    channel = pickle_channel(counter)
    serialized.set_channel(channel)
    parts = [start_send(comm, byte_spec(serialized.view), dest, tag, mode, call=call)]
    buffer_mode = BUFFERED if mode is BUFFERED else STANDARD
    for buffer in serialized.buffers:
        parts.append(start_send(comm, byte_spec(buffer), dest, channel, buffer_mode, call=call))
    return PickledSend(parts, serialized)


class PickledRecv:
    """A receive of an object: match the stream message, receive it, then its buffers.

    The process advances every pickled receive in progress from a progress callback, oldest
    first (:meth:`~.process.MpiProcess.track_pickled`), so a receive matches while the program
    waits for anything, and receives posted earlier match earlier.  Reading ``complete`` also
    advances them, for waits that test before they progress.
    """

    __slots__ = (
        "_buffers",
        "_data",
        "_done",
        "_inner",
        "_parts",
        "_stage",
        "cancelled",
        "comm",
        "count",
        "error",
        "exception",
        "result",
        "source",
        "tag",
        "want_source",
        "want_tag",
    )

    _PROBE, _STREAM, _BUFFERS = 0, 1, 2

    def __init__(self, comm: Communicator, source: int, tag: int, message: Any = None) -> None:
        self.comm = comm
        self.want_source = source
        self.want_tag = tag
        self.source = source
        self.tag = tag
        self.count = 0
        self.error = 0
        self.exception: BaseException | None = None
        self.cancelled = False
        self.result: Any = None
        self._done = False
        self._inner: Any = None
        self._data: bytearray | None = None
        self._parts: list[Any] = []
        self._buffers: list[bytearray] = []
        self._stage = self._PROBE
        if message is not None:
            self._receive_stream(message)
        comm.process.track_pickled(self)

    @property
    def complete(self) -> bool:
        if not self._done:
            self.comm.process.advance_pickled()  # older receives match first
        return self._done

    @property
    def done(self) -> bool:
        return self._done

    def step(self) -> None:
        """Advance as far as the messages that have arrived allow."""
        if not self._done:
            self._advance()

    def cancel(self) -> None:
        """Cancel while nothing has matched yet; afterwards the receive completes normally."""
        if self._stage == self._PROBE and not self._done:
            self.cancelled = True
            self._done = True

    def _advance(self) -> None:
        try:
            if self._stage == self._PROBE:
                message = self.comm.pml.improbe(self.want_source, self.want_tag, self.comm)
                if message is None:
                    return
                self._receive_stream(message)
            if self._stage == self._STREAM:
                if not self._inner.complete:
                    return
                self._stream_received()
            if self._stage == self._BUFFERS and all(part.complete for part in self._parts):
                self._buffers_received()
        except BaseException as error:  # reported by the wait, like any failed receive
            self.exception = error
            self.error = getattr(error, "error_class", ERR_OTHER)
            self._done = True

    def _receive_stream(self, message: Any) -> None:
        self._data = bytearray(message.count)
        self._inner = self.comm.pml.imrecv(byte_spec(memoryview(self._data)), message)
        self._stage = self._STREAM

    def _stream_received(self) -> None:
        inner = self._inner
        self.source, self.tag, self.count = inner.source, inner.tag, inner.count
        if inner.exception is not None:
            raise inner.exception
        _stream, channel, sizes = parse_stream(memoryview(self._data))
        pml, comm = self.comm.pml, self.comm
        for size in sizes:
            buffer = bytearray(size)
            self._buffers.append(buffer)
            self._parts.append(
                pml.irecv(byte_spec(memoryview(buffer)), inner.source, channel, comm)
            )
        self._stage = self._BUFFERS

    def _buffers_received(self) -> None:
        for part in self._parts:
            if part.exception is not None:
                raise part.exception
        stream, _, _ = parse_stream(memoryview(self._data))
        self.result = pickle.loads(stream, buffers=self._buffers)
        self._data = None
        self._parts = []
        self._buffers = []
        self._done = True
