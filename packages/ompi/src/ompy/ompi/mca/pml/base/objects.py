"""Python objects over any PML: a stream message, then the object's out-of-band buffers.

The framing is the object codec's (:mod:`ompy.opal.codec`): one *stream message* on the
caller's tag, then one message per out-of-band buffer on the *channel* tag the stream message
names.  Point-to-point (``comm.send``) uses a private channel per message; a collective uses
its own tag, since at most one object goes from one rank to another in one collective call.

Receiving: the stream's size is known only to its sender, so the receive is the PML's *sized
receive* (``irecv_view(None, ...)``, or ``imrecv(None, message)`` for a message a matched probe
took): it takes its place in the matching order at once, like any receive (a later ``Recv`` on
the same source and tag cannot overtake it), and the PML allocates the buffer when the message
matches.  When the stream has arrived (a completion callback), the buffers are received from
the sender it matched, on the channel the header names.

:class:`ObjectRecv` is that receive as a request (``comm.recv``, ``comm.irecv``, several
receives in flight together).  :func:`finish_object_recv` is its blocking form for a caller
that waits for one object at a time (the collectives' steps): it waits on the PML's stream
request itself, so a small object costs no request object, callback or framing of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ompy.opal.codec import Encoded, FramingError, Pickle, parse_frame

from ....errors import ERR_OTHER
from ....errors import Exception as MPIException
from ..interface import PmlComm, PmlMessage, PmlModule, PmlRequest, SizedRecvRequest

if TYPE_CHECKING:
    from ompy.opal.progress import ProgressEngine


class ObjectSend:
    """A send of an object that needed several messages (stream and buffers).

    It has the shape of a request (``complete``, status fields, ``exception``), so the API's
    waits take it like any PML request.
    """

    __slots__ = ("_done", "encoded", "parts")

    #: Sends carry no object back.
    result = None
    cancelled = False

    def __init__(self, parts: list[PmlRequest], encoded: Encoded) -> None:
        self.parts = parts
        self.encoded = encoded  # keeps the stream alive until it is sent
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

    @property
    def source(self) -> int:
        return self.parts[0].source

    @property
    def tag(self) -> int:
        return self.parts[0].tag

    @property
    def count(self) -> int:
        return self.parts[0].count

    def cancel(self) -> None:
        """Sends of objects are not cancelled (MPI lets a cancel fail)."""


#: Starts one message of an object: ``start(view, dest, tag, first)`` (``first``: the stream
#: message, which carries the caller's send mode; the buffers follow in standard mode).
StartMessage = Callable[[memoryview, int, int, bool], PmlRequest]


def send_parts(
    encoded: Encoded, start: StartMessage, dest: int, tag: int, channel: int
) -> PmlRequest | ObjectSend:
    """Send ``encoded`` to ``dest``: its stream message on ``tag``, its buffers on ``channel``.

    ``start`` starts each message and returns its request.  ``encoded`` must already name
    ``channel`` in its header when it has buffers.
    """
    if not encoded.outgoing:
        return start(encoded.view, dest, tag, True)
    parts = [start(encoded.view, dest, tag, True)]
    for buffer in encoded.outgoing:
        parts.append(start(buffer, dest, channel, False))
    return ObjectSend(parts, encoded)


class ObjectRecv:
    """A receive of an object: its stream message (sized by the PML at match), then its buffers.

    The buffers' receives are posted from the stream's completion callback, so the receive
    advances whenever the process progresses, whatever it waits for (a synchronous send to a
    peer that is itself waiting for this receive's buffers completes).  Decoding runs no user
    code inside the PML's callbacks: it happens when the program next looks at ``complete``
    (every wait does).  Errors are kept and raised by the wait, like any failed receive.
    """

    __slots__ = (
        "_buffers",
        "_codec",
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
        "pml",
        "result",
        "source",
        "tag",
    )

    def __init__(  # noqa: PLR0917 (every argument is needed; called in two places)
        self,
        pml: PmlModule,
        comm: PmlComm,
        codec: Pickle,
        source: int,
        tag: int,
        message: PmlMessage | None = None,
    ) -> None:
        self.pml = pml
        self.comm = comm
        self._codec = codec
        self.source = source
        self.tag = tag
        self.count = 0
        self.error = 0
        self.exception: BaseException | None = None
        self.cancelled = False
        self.result: Any = None
        self._done = False
        #: The pickle stream once the stream message arrived (None: it is the first buffer).
        self._data: memoryview | None = None
        self._parts: list[PmlRequest] = []
        self._buffers: list[bytearray] = []
        self._left = -1  # buffers still to arrive; -1 while the stream has not
        if message is not None:  # matched by Mprobe: sized by the PML as it receives
            stream = pml.imrecv(None, message)
        else:  # posted now, in matching order; the PML sizes its buffer at match time
            stream = pml.irecv_view(None, source, tag, comm)
        self._stream = stream
        if stream.complete:
            self._stream_done(stream)
        else:
            stream.on_complete = self._stream_done

    @property
    def complete(self) -> bool:
        if not self._done and not self._left:
            try:
                buffers = self._buffers
                if self._data is None:  # the stream came first among the buffers
                    self.result = self._codec.decode(buffers[0], buffers[1:])
                else:
                    self.result = self._codec.decode(self._data, buffers)
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

    def _stream_done(self, _request: object) -> None:
        stream = self._stream
        try:
            self.source, self.tag, self.count = stream.source, stream.tag, stream.count
            if stream.cancelled:
                self.cancelled = True
                self._done = True
                return
            self._data, channel, sizes = parse_stream(stream)  # keeps the pickle stream only
            self._left = len(sizes)
            pml, comm, source = self.pml, self.comm, stream.source
            for size in sizes:
                buffer = bytearray(size)
                self._buffers.append(buffer)
                self._parts.append(pml.irecv_view(memoryview(buffer), source, channel, comm))
            for part in self._parts:
                if part.complete:
                    self._part_done(part)
                else:
                    part.on_complete = self._part_done
        except BaseException as error:  # reported by the wait, like any failed receive
            self._fail(error)

    def _part_done(self, part: PmlRequest) -> None:
        if self._done:
            return
        if part.exception is not None:
            self._fail(part.exception)
        else:
            self._left -= 1

    def _fail(self, error: BaseException) -> None:
        self.exception = error
        self.error = error.Get_error_class() if isinstance(error, MPIException) else ERR_OTHER
        self._data = None
        self._done = True


def post_object_recv(  # noqa: PLR0917 (the receive's own arguments, and where it runs)
    pml: PmlModule,
    comm: PmlComm,
    codec: Pickle,
    engine: ProgressEngine,
    source: int,
    tag: int,
    message: PmlMessage | None = None,
) -> ObjectRecv:
    """Post an :class:`ObjectRecv`, under ``engine``'s MPI lock when threads are on.

    With THREAD_MULTIPLE another thread's progress could complete the stream between the
    receive's test of ``complete`` and its setting of ``on_complete``; below it no lock is
    taken (this is the path of every ``recv``).
    """
    if engine.threaded:
        with engine.lock:
            return ObjectRecv(pml, comm, codec, source, tag, message)
    return ObjectRecv(pml, comm, codec, source, tag, message)


def parse_stream(stream: SizedRecvRequest) -> tuple[memoryview | None, int, list[int]]:
    """The framing of a completed stream receive (:func:`~ompy.opal.codec.parse_frame`).

    The receive's own failure, and a message without the codec's framing, are raised as
    ``MPI.Exception``.
    """
    if stream.exception is not None:
        raise stream.exception
    data = stream.view
    if data is None:
        raise MPIException(ERR_OTHER, "the PML completed a sized receive without data")
    try:
        return parse_frame(data)
    except FramingError as error:
        raise MPIException(ERR_OTHER, str(error)) from None


def finish_object_recv(
    pml: PmlModule, comm: PmlComm, codec: Pickle, engine: ProgressEngine, stream: SizedRecvRequest
) -> Any:
    """The object of a posted stream receive (``irecv_view(None, ...)``), waiting for it.

    The blocking form of :class:`ObjectRecv` for one object at a time (what the collectives'
    point-to-point steps receive): no request object, no completion callback, and for a small
    object (no out-of-band buffers) nothing but the wait and the decoding.  The buffers of a
    large one are received from the stream's sender on the channel its header names, posted
    before anything else is waited for, so a peer's sends of them always find their receive.
    """
    if not stream.complete:
        engine.wait_for(stream)
    if stream.exception is not None:
        raise stream.exception
    data = stream.view
    if data is None:
        raise MPIException(ERR_OTHER, "the PML completed a sized receive without data")
    return object_of_stream(pml, comm, codec, engine, data, stream.source)


def object_of_stream(  # noqa: PLR0917 (the receive's own arguments, and where it runs)
    pml: PmlModule,
    comm: PmlComm,
    codec: Pickle,
    engine: ProgressEngine,
    message: memoryview,
    source: int,
) -> Any:
    """The object whose stream message ``message`` came from ``source``, receiving its
    out-of-band buffers (if it has any) on the channel its header names, then decoding.

    A message without the codec's framing is raised as ``MPI.Exception``.
    """
    try:
        data, channel, sizes = parse_frame(message)
    except FramingError as error:
        raise MPIException(ERR_OTHER, str(error)) from None
    if not sizes:
        return codec.decode(data, [])
    buffers = [bytearray(size) for size in sizes]
    parts = [pml.irecv_view(memoryview(buffer), source, channel, comm) for buffer in buffers]
    for part in parts:
        if not part.complete:
            engine.wait_for(part)
        if part.exception is not None:
            raise part.exception
    if data is None:  # the stream came first among the buffers
        return codec.decode(buffers[0], buffers[1:])
    return codec.decode(data, buffers)
