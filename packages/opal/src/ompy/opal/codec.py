"""The object codec: Python objects as pickle streams with out-of-band buffers, in one framing.

Every lowercase path of ompy (``comm.send``/``recv``, ``comm.bcast``/``allreduce``/...) moves
objects through this module, so they all serialize the same way and share one wire format:

*Serializing* is :class:`Pickle`'s job (mpi4py's ``MPI.Pickle``, whose process-wide instance is
``MPI.pickle``): ``dumps``/``loads`` functions, a protocol and a threshold.  With pickle
protocol 5 (the default), contiguous buffers inside the object (numpy arrays, bytearrays) of at
least ``THRESHOLD`` bytes are left out of the stream (*out of band*): they travel straight from
the object's memory and arrive in buffers of their own, which ``loads`` hands back to numpy,
without a copy on either side.  A user's own ``dumps``/``loads`` (json, marshal, dill, ...) are
called the way mpi4py calls them: ``dumps(obj, protocol)`` when a protocol is set, else
``dumps(obj)``; buffers go out of band only with protocol 5 or higher (or -1, the highest),
since only then does ``dumps`` take a ``buffer_callback``.

*Framing* is :class:`Encoded`'s: an object travels as one *stream message*::

    header (nbufs | STREAM_FIRST, channel tag, stream length) | stream | nbufs x buffer size

followed by one message per out-of-band buffer on the *channel* tag the header names (the
caller chooses it: a private tag per point-to-point message, the collective's own tag in a
collective).  A long stream (a large ``bytes`` or ``str`` pickles in-band) travels as the
first buffer instead of being copied behind the header (``STREAM_FIRST`` in the buffer count).
:func:`parse_frame` reads a received stream message back.

Nothing here knows about communicators or the PML: the ompi layer moves the messages.
"""

from __future__ import annotations

import pickle as _pickle
import struct
from collections.abc import Callable, Iterable
from typing import Any, Final

#: The protocol of the standard ``pickle`` module used when none is set (5 on Python 3.8+).
DEFAULT_PROTOCOL: Final = _pickle.HIGHEST_PROTOCOL
#: Contiguous buffers at least this large travel out of band (no copy); smaller ones in-band.
#: ompy's default is lower than mpi4py's (256 KiB) because here a second message costs less
#: than copying 16 KiB into the stream and out again.
DEFAULT_THRESHOLD: Final = 16 * 1024
#: Pickle streams at least this long travel out of band too, as the first buffer: copying them
#: behind the header would cost more than the extra message.
STREAM_OOB_THRESHOLD: Final = 256 * 1024

# Network byte order, as every header on the wire (a peer of another architecture reads it).
HEADER: Final = struct.Struct("!IiQ")  # buffers (| STREAM_FIRST), channel tag, stream length
SIZE: Final = struct.Struct("!Q")
_HEADER_SIZE: Final = HEADER.size
_pack_header = HEADER.pack
_unpack_header = HEADER.unpack_from
#: Flag in the header's buffer count: the stream is the first out-of-band buffer.
STREAM_FIRST: Final = 1 << 31

#: Types whose pickles never hold out-of-band buffers: pickled without a buffer callback.
_PLAIN: Final = frozenset({bytes, str, int, float, bool, complex, type(None)})
_std_dumps = _pickle.dumps
_std_loads = _pickle.loads

Dumps = Callable[..., bytes]
Loads = Callable[..., Any]


class FramingError(ValueError):
    """A received stream message does not have the codec's framing."""


class Pickle:
    """Pickle/unpickle Python objects (the serializer of every lowercase MPI call)."""

    __slots__ = ("_dumps", "_loads", "_oob", "_protocol", "_threshold")

    def __init__(
        self,
        dumps: Dumps | None = None,
        loads: Loads | None = None,
        protocol: int | None = None,
        threshold: int | None = None,
    ) -> None:
        if dumps is not None and not callable(dumps):
            raise TypeError(f"Pickle: dumps must be callable, not {type(dumps).__name__}")
        if loads is not None and not callable(loads):
            raise TypeError(f"Pickle: loads must be callable, not {type(loads).__name__}")
        self._dumps: Dumps = _std_dumps if dumps is None else dumps
        self._loads: Loads = _std_loads if loads is None else loads
        self._protocol: int | None = None
        self._threshold = DEFAULT_THRESHOLD
        self._oob = False
        self.PROTOCOL = protocol
        self.THRESHOLD = threshold

    @property
    def PROTOCOL(self) -> int | None:
        """Protocol version (None: ``dumps`` is called without one)."""
        return self._protocol

    @PROTOCOL.setter
    def PROTOCOL(self, protocol: int | None) -> None:
        if protocol is None and self._dumps is _std_dumps:
            protocol = DEFAULT_PROTOCOL
        if protocol is not None and (isinstance(protocol, bool) or not isinstance(protocol, int)):
            raise TypeError(f"Pickle: protocol must be an int or None, not {protocol!r}")
        self._protocol = protocol
        self._oob = protocol is not None and (protocol < 0 or protocol >= 5)

    @property
    def THRESHOLD(self) -> int:
        """Out-of-band threshold: contiguous buffers of this many bytes or more leave the stream."""
        return self._threshold

    @THRESHOLD.setter
    def THRESHOLD(self, threshold: int | None) -> None:
        if threshold is None:
            threshold = DEFAULT_THRESHOLD
        if isinstance(threshold, bool) or not isinstance(threshold, int):
            raise TypeError(f"Pickle: threshold must be an int or None, not {threshold!r}")
        self._threshold = threshold

    def __repr__(self) -> str:
        return (
            f"<Pickle dumps={self._dumps!r} protocol={self._protocol} threshold={self._threshold}>"
        )

    # -- mpi4py's methods ----------------------------------------------------------------------

    def dumps(self, obj: Any) -> bytes:
        """Serialize object to pickle data stream."""
        if self._protocol is None:
            return self._dumps(obj)
        return self._dumps(obj, self._protocol)

    def loads(self, data: Any) -> Any:
        """Deserialize object from pickle data stream."""
        return self._loads(data)

    def dumps_oob(self, obj: Any) -> tuple[bytes, list[memoryview]]:
        """Serialize object to pickle data stream and out-of-band buffers."""
        protocol = DEFAULT_PROTOCOL if self._protocol is None else self._protocol
        if 0 <= protocol < 5:
            protocol = 5
        return self._dumps_oob(obj, protocol)

    def loads_oob(self, data: Any, buffers: Iterable[Any]) -> Any:
        """Deserialize object from pickle data stream and out-of-band buffers."""
        return self._loads(data, buffers=buffers)

    # -- what the lowercase paths use ----------------------------------------------------------

    def encode(self, obj: Any) -> tuple[bytes, list[memoryview]]:
        """The stream of ``obj`` and the buffers that travel out of band (none in-band codecs)."""
        if not self._oob:
            return self.dumps(obj), []
        if type(obj) in _PLAIN:
            return self._dumps(obj, self._protocol), []
        return self._dumps_oob(obj, self._protocol)

    def decode(self, stream: Any, buffers: list[Any]) -> Any:
        """The object of a stream and its out-of-band buffers (as :meth:`encode` made them)."""
        if buffers:
            return self._loads(stream, buffers=buffers)
        return self._loads(stream)

    def _dumps_oob(self, obj: Any, protocol: int | None) -> tuple[bytes, list[memoryview]]:
        buffers: list[memoryview] = []
        threshold = self._threshold

        def out_of_band(buffer: _pickle.PickleBuffer) -> bool:
            try:
                raw = buffer.raw()  # refuses non-contiguous buffers: those stay in-band
            except BufferError:
                return True
            if raw.nbytes < threshold:
                return True
            buffers.append(raw)
            return False

        return self._dumps(obj, protocol, buffer_callback=out_of_band), buffers


def frame(stream: bytes, buffers: list[memoryview], channel: int) -> memoryview:
    """The stream message: header, pickle stream, the size of each out-of-band buffer.

    An empty ``stream`` with buffers means the stream is the first buffer (a long one).
    """
    if not buffers:  # the common case: a small object, in one message
        return memoryview(_pack_header(0, channel, len(stream)) + stream)
    nbufs = len(buffers) if stream else len(buffers) | STREAM_FIRST
    head = HEADER.pack(nbufs, channel, len(stream))
    sizes = b"".join(SIZE.pack(buffer.nbytes) for buffer in buffers)
    return memoryview(b"".join((head, stream, sizes)))


class Encoded:
    """An object ready to send: its stream message (``view``) and what follows on the channel.

    ``buffers`` are the object's out-of-band buffers; ``outgoing`` the channel's messages in
    order: the same, preceded by the stream itself when it is long.
    """

    __slots__ = ("buffers", "outgoing", "stream", "view")

    def __init__(self, stream: bytes, buffers: list[memoryview], channel: int = 0) -> None:
        self.stream, self.buffers = stream, buffers
        if len(stream) >= STREAM_OOB_THRESHOLD:
            self.outgoing = [memoryview(stream), *buffers]
        else:
            self.outgoing = buffers
        self.view = self._frame(channel)

    @classmethod
    def of(cls, codec: Pickle, obj: Any, channel: int = 0) -> Encoded:
        """``obj`` encoded by ``codec``, its buffers announced on ``channel``."""
        return cls(*codec.encode(obj), channel)

    def set_channel(self, channel: int) -> None:
        """Name the channel tag the buffers travel on (in a new stream message)."""
        self.view = self._frame(channel)

    def _frame(self, channel: int) -> memoryview:
        in_band = self.stream if self.outgoing is self.buffers else b""
        return frame(in_band, self.outgoing, channel)


def parse_frame(data: memoryview) -> tuple[memoryview | None, int, list[int]]:
    """(pickle stream, channel tag, buffer sizes) of a received stream message.

    The stream is None when it travels as the first buffer.  A message without the framing
    (sent with an uppercase method, or truncated) raises :class:`FramingError`.
    """
    nbytes = data.nbytes
    if nbytes < _HEADER_SIZE:
        raise FramingError(
            f"a pickled message of {nbytes} bytes is too short for its header; was it sent "
            "with an uppercase method (Send) and received with a lowercase one (recv)?"
        )
    nbufs, channel, length = _unpack_header(data)
    if not nbufs and _HEADER_SIZE + length == nbytes:  # the common case: no buffers
        return data[_HEADER_SIZE:], channel, []
    first = nbufs & STREAM_FIRST
    nbufs &= ~STREAM_FIRST
    end = HEADER.size + length
    if end + nbufs * SIZE.size != data.nbytes or (first and (length or not nbufs)):
        raise FramingError(
            f"a pickled message of {data.nbytes} bytes does not match its header ({length} "
            f"bytes of stream, {nbufs} buffers); was it sent with an uppercase method (Send)?"
        )
    sizes = [SIZE.unpack_from(data, end + i * SIZE.size)[0] for i in range(nbufs)]
    return (None if first else data[HEADER.size : end]), channel, sizes


#: The process's default codec: ``MPI.pickle``.  Configuring it (``MPI.pickle.__init__(dumps,
#: loads)``, ``MPI.pickle.THRESHOLD = n``) changes how every lowercase call serializes, as in
#: mpi4py; instances reach it as ``Instance.codec``.
pickle: Final = Pickle()
