"""The lowercase collectives' algorithms: Python objects moved as pickles, point to point.

Each call draws one collective tag (:func:`~ompy.ompi.mca.coll.base.next_tag`, so it never
mixes with other collectives in flight) and moves pickles (protocol 5) point to point instead
of through the coll table's byte operations, which would need a collective for the sizes
before the one for the bytes.  Every receive is posted for one message of :data:`EAGER` bytes:
a small pickle travels in it whole (one message, no probe); a larger one sends there its
lengths, then the stream and each large buffer (out of band, no copy) as further messages on
the same tag, which MPI's non-overtaking order keeps in sequence.  At most one object goes
from one rank to another in one call.  The shapes are mpi4py's and MPICH's:

- ``reduce``: a binomial tree towards rank 0 on absolute ranks, each inner rank applying the
  operation as its children's partial results arrive, ``op(mine, theirs)`` with ``mine`` the
  lower ranks, then rank 0 hands the result to the root if that is another rank;
- ``allreduce``: recursive doubling, the first ``2 (p - 2^k)`` ranks folded in pairs first, so
  ``log2 p`` exchanges of one pickle each;
- ``scan``/``exscan``: recursive doubling on partial results;
- ``bcast``: a binomial tree from the root; ``gather``, ``scatter`` and ``alltoall``: one
  message per pair, all posted at once; ``allgather``: gather to rank 0 and a broadcast.

Reductions keep MPI's rank order (any associative operation works, commutative or not); every
member gets its own object, the root included, as with mpi4py.
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable, Sequence
from typing import Any, Final

from ..mca.coll.base import next_tag, recv, send
from .communicator import Communicator

Function = Callable[[Any, Any], Any]
_PROTOCOL = 5


def bcast(c: Communicator, obj: Any, root: int) -> Any:
    """``obj`` of the root on every member (the root gets a copy too)."""
    tag = next_tag(c)
    rank, size = c.rank, c.size
    relative = (rank - root) % size
    mask = 1
    while mask < size:  # receive from the parent: clear the lowest set bit
        if relative & mask:
            obj = _receive(c, (rank - mask) % size, tag)
            break
        mask <<= 1
    else:
        obj = _copy(obj)
    mask >>= 1
    sends = []
    messages: list[memoryview] = []
    while mask > 0:
        if relative + mask < size:
            messages = messages or _serialize(obj)  # pickled once for every child
            sends.append(_Outgoing(c, messages, (rank + mask) % size, tag))
        mask >>= 1
    _wait(c, sends)
    return obj


def gather(c: Communicator, obj: Any, root: int) -> list[Any] | None:
    """Every member's object, in rank order, at the root (``None`` elsewhere)."""
    tag = next_tag(c)
    if c.rank != root:
        _wait(c, [_send(c, obj, root, tag)])
        return None
    receives = {peer: _Incoming(c, peer, tag) for peer in range(c.size) if peer != root}
    return [_copy(obj) if peer == root else receives[peer].result() for peer in range(c.size)]


def scatter(c: Communicator, items: Sequence[Any] | None, root: int) -> Any:
    """Item ``i`` of the root's sequence on rank ``i``."""
    tag = next_tag(c)
    if c.rank != root:
        return _receive(c, root, tag)
    assert items is not None
    _wait(c, [_send(c, items[peer], peer, tag) for peer in range(c.size) if peer != root])
    return _copy(items[root])


def allgather(c: Communicator, obj: Any) -> list[Any]:
    """Every member's object, in rank order, on every member."""
    return bcast(c, gather(c, obj, 0), 0)


def alltoall(c: Communicator, items: Sequence[Any]) -> list[Any]:
    """Item ``i`` of every member's sequence goes to rank ``i``."""
    tag = next_tag(c)
    rank, size = c.rank, c.size
    peers = [(rank + step) % size for step in range(1, size)]
    receives = {peer: _Incoming(c, peer, tag) for peer in peers}
    sends = [_send(c, items[peer], peer, tag) for peer in peers]
    result = [
        _copy(items[rank]) if peer == rank else receives[peer].result() for peer in range(size)
    ]
    _wait(c, sends)
    return result


def reduce(c: Communicator, obj: Any, op: Function, root: int) -> Any | None:
    """``x0 op x1 op ... op xp-1`` at the root (``None`` elsewhere)."""
    tag = next_tag(c)
    rank, size = c.rank, c.size
    result = obj
    mask = 1
    while mask < size:
        if rank & mask:  # hand the partial result of ranks rank .. rank+mask-1 to the parent
            _wait(c, [_send(c, result, rank - mask, tag)])
            result = None
            break
        if rank + mask < size:
            result = op(result, _receive(c, rank + mask, tag))
        mask <<= 1
    if root == 0:
        return _own(result, obj) if rank == 0 else None
    if rank == 0:
        _wait(c, [_send(c, result, root, tag)])
        return None
    return _receive(c, 0, tag) if rank == root else None


def allreduce(c: Communicator, obj: Any, op: Function) -> Any:
    """``x0 op x1 op ... op xp-1`` on every member (recursive doubling)."""
    tag = next_tag(c)
    rank, size = c.rank, c.size
    pof2 = 1 << (size.bit_length() - 1)
    extra = size - pof2
    result = obj
    if rank < 2 * extra:  # fold pairs (even, odd) into the odd rank
        if rank % 2 == 0:
            _wait(c, [_send(c, result, rank + 1, tag)])
            return _receive(c, rank + 1, tag)
        result = op(_receive(c, rank - 1, tag), result)
        new = rank // 2
    else:
        new = rank - extra
    mask = 1
    while mask < pof2:
        partner = new ^ mask
        peer = partner * 2 + 1 if partner < extra else partner + extra
        theirs = _exchange(c, result, peer, tag)
        result = op(result, theirs) if peer > rank else op(theirs, result)
        mask <<= 1
    if rank < 2 * extra:
        _wait(c, [_send(c, result, rank - 1, tag)])
    return _own(result, obj)


def scan(c: Communicator, obj: Any, op: Function, *, exclusive: bool = False) -> Any:
    """``x0 op ... op xr`` on rank ``r`` (``exclusive``: up to ``xr-1``, ``None`` on rank 0)."""
    tag = next_tag(c)
    rank, size = c.rank, c.size
    partial = obj  # the reduction of this rank's aligned group so far
    result = None if exclusive else obj
    mask = 1
    while mask < size:
        peer = rank ^ mask
        if peer < size:
            theirs = _exchange(c, partial, peer, tag)
            if peer < rank:
                partial = op(theirs, partial)
                result = theirs if result is None else op(theirs, result)
            else:
                partial = op(partial, theirs)
        mask <<= 1
    return None if result is None else _own(result, obj)


# -- the transport: pickles in one message when they are small -----------------------------------


#: A pickle up to this many bytes travels in the one message a receive is posted for.
EAGER: Final = 8192
#: Contiguous buffers at least this large travel out of band, each in a message of its own.
OOB_THRESHOLD: Final = 16 * 1024
_SMALL, _LARGE = 0, 1
_LENGTHS = struct.Struct("<BQI")  # kind, stream length, number of out-of-band buffers
_SIZE = struct.Struct("<Q")


def _serialize(obj: Any) -> list[memoryview]:
    """The messages of ``obj``: one for a small pickle, else lengths, stream and buffers."""
    buffers: list[memoryview] = []

    def out_of_band(buffer: pickle.PickleBuffer) -> bool:
        try:
            raw = buffer.raw()
        except BufferError:  # not contiguous: stays in the stream
            return True
        if raw.nbytes < OOB_THRESHOLD:
            return True
        buffers.append(raw)
        return False

    stream = pickle.dumps(obj, _PROTOCOL, buffer_callback=out_of_band)
    if not buffers and len(stream) < EAGER:
        return [memoryview(b"%c%b" % (_SMALL, stream))]
    header = bytearray(_LENGTHS.pack(_LARGE, len(stream), len(buffers)))
    for buffer in buffers:
        header += _SIZE.pack(buffer.nbytes)
    if len(header) > EAGER:  # too many buffers to announce in one message: all in-band
        stream, buffers = pickle.dumps(obj, _PROTOCOL), []
        header = bytearray(_LENGTHS.pack(_LARGE, len(stream), 0))
    return [memoryview(header), memoryview(stream), *buffers]


class _Outgoing:
    """An object on its way to one peer: the send requests of its messages (which keep them)."""

    __slots__ = ("requests",)

    def __init__(self, c: Communicator, messages: list[memoryview], dest: int, tag: int) -> None:
        self.requests = [send(c, message, dest, tag) for message in messages]

    @property
    def complete(self) -> bool:
        return all(request.complete for request in self.requests)

    @property
    def exception(self) -> BaseException | None:
        return next((r.exception for r in self.requests if r.exception is not None), None)


class _Incoming:
    """An object on its way from one peer: the first message, then any further ones."""

    __slots__ = ("_stream", "c", "first", "source", "tag")

    def __init__(self, c: Communicator, source: int, tag: int) -> None:
        self.c, self.source, self.tag = c, source, tag
        self._stream = bytearray(EAGER)
        self.first = recv(c, memoryview(self._stream), source, tag)

    def result(self) -> Any:
        """Wait for the object and return it."""
        if not self.first.complete:
            _wait(self.c, [self.first])
        elif self.first.exception is not None:
            raise self.first.exception
        data = memoryview(self._stream)[: self.first.count]
        if data[0] == _SMALL:
            return pickle.loads(data[1:])
        _kind, length, count = _LENGTHS.unpack_from(data)
        sizes = [_SIZE.unpack_from(data, _LENGTHS.size + i * _SIZE.size)[0] for i in range(count)]
        stream = bytearray(length)
        buffers = [bytearray(size) for size in sizes]
        c, source, tag = self.c, self.source, self.tag
        _wait(c, [recv(c, memoryview(part), source, tag) for part in [stream, *buffers]])
        return pickle.loads(stream, buffers=buffers)


def _send(c: Communicator, obj: Any, dest: int, tag: int) -> _Outgoing:
    return _Outgoing(c, _serialize(obj), dest, tag)


def _receive(c: Communicator, source: int, tag: int) -> Any:
    return _Incoming(c, source, tag).result()


def _exchange(c: Communicator, obj: Any, peer: int, tag: int) -> Any:
    """Send ``obj`` to ``peer`` and receive its object, both in flight together."""
    incoming = _Incoming(c, peer, tag)
    outgoing = _send(c, obj, peer, tag)
    _wait(c, [incoming.first, *outgoing.requests])
    return incoming.result()


def _wait(c: Communicator, requests: list[Any]) -> None:
    for request in requests:
        if not request.complete:
            c.engine.wait_until(lambda: all(request.complete for request in requests))
            break
    for request in requests:
        if request.exception is not None:
            raise request.exception


def _copy(obj: Any) -> Any:
    return pickle.loads(pickle.dumps(obj, _PROTOCOL))


def _own(result: Any, obj: Any) -> Any:
    """``result``, or a copy of it when it is still the caller's own object."""
    return _copy(result) if result is obj else result
