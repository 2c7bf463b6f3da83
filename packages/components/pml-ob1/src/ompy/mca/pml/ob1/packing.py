"""Non-contiguous messages through the convertor: what the protocols pack and unpack.

A buffer spec of a non-contiguous layout carries an opal
:class:`~ompy.opal.datatype.convertor.Convertor` instead of a byte view; ob1 moves its *packed
stream* (the elements' data, in typemap order, without gaps).  The protocols stay the same; only
the step that touches the user's memory changes:

- sending, each fragment is packed straight into the descriptor the module will put on the wire
  (:func:`packed_descriptor`): the eager message, the rendezvous' first fragment and every FRAG,
  at its byte position of the stream, as the pipeline goes;
- receiving, the request's ``view`` is a :class:`PackedTarget`: every ``view[a:b] = data`` the
  protocols do (eager copy, first fragment, each FRAG at its offset) unpacks ``data`` at stream
  position ``a`` into the user's layout, so the receive needs no staging copy of the message;
- the RGET protocol reads contiguous memory: a non-contiguous sender packs the whole stream
  once into a buffer of its own and offers that (one vectorised copy beats a fragment
  pipeline through the rings), and a non-contiguous receiver of an RGET reads each piece into
  a scratch buffer of the piece's size and unpacks it (:func:`unpack_piece`).
"""

from __future__ import annotations

from typing import Any

from ompy.opal.datatype.convertor import Convertor


class PackedTarget:
    """The receive buffer of a non-contiguous layout, as ob1's receive protocols write it.

    It has the two operations they use on a receive view: ``len(target)`` (the packed size:
    the most the receive takes) and slice assignment ``target[a:b] = data``, which unpacks
    ``data`` at position ``a`` of the packed stream.
    """

    __slots__ = ("convertor", "length")

    def __init__(self, convertor: Convertor) -> None:
        self.convertor = convertor
        self.length = convertor.packed_size

    def __len__(self) -> int:
        return self.length

    def __setitem__(self, key: slice, data: Any) -> None:
        self.convertor.unpack(key.start or 0, data)

    def __repr__(self) -> str:
        return f"<ob1 packed receive target of {self.length} bytes>"


def packed_prefix(convertor: Convertor, nbytes: int) -> memoryview:
    """The first ``nbytes`` of the packed stream, in a new buffer (a control fragment's data)."""
    out = memoryview(bytearray(nbytes))
    if nbytes:
        convertor.pack(0, out)
    return out


def packed_descriptor(  # noqa: PLR0917 (called per fragment: positional is cheapest)
    btl: Any, convertor: Convertor, position: int, end: int, reserve: int, flags: Any
) -> Any:
    """A descriptor of ``reserve`` header bytes then the packed bytes from ``position`` on.

    As many as fit a fragment (``max_send_size``) and no more than up to ``end`` are packed
    straight into the descriptor; ``data_length`` says how many.  None when the module has no
    descriptor free now.
    """
    room = btl.max_send_size - reserve
    count = end - position if end - position <= room else room
    descriptor = btl.alloc(btl.endpoint, reserve + count, flags)
    if descriptor is None:
        return None
    convertor.pack(position, descriptor.segments[0][reserve:])
    descriptor.data_length = count
    return descriptor


def unpack_piece(target: PackedTarget, position: int, piece: memoryview) -> None:
    """Unpack a piece read by RDMA into scratch memory at its stream ``position``."""
    target.convertor.unpack(position, piece)
