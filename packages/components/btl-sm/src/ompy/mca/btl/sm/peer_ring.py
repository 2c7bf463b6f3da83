"""One peer's ring, polled in place: the receive half of the small-message fast path.

A blocking receive that only one peer can satisfy (docs/point-to-point.md, "The small-message
fast path") reads the next record of that peer's ring itself, the way Open MPI's receiver
checks a fast box: no progress pass over every ring and transport, no callback.  The record
stays in the ring until :meth:`SmPeerRing.release`, so a record the poller does not take is
delivered by the next progress pass exactly as if nobody had looked.  Only the lock-free ring
protocol is polled this way (the locked one reads its counters under a record lock).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from . import layout as L  # noqa: N812 (read as "the layout")

if TYPE_CHECKING:
    from .module import Inbox, SmBtlModule

_UNPACK = L.RECORD.unpack_from
_SKIP = L.SKIP
_C_HEAD, _C_TAIL, _C_WAITING = L.C_HEAD, L.C_TAIL, L.C_WAITING


class _Closed:
    """What a ring reads as once its module finalized: head and tail agree, forever."""

    __slots__ = ()
    ctl = (0,) * L.CONTROL_WORDS
    counter = 0


CLOSED = _Closed()


class SmPeerRing:
    """The :class:`~ompy.opal.mca.btl.PeerRing` of one inbox of an sm module."""

    __slots__ = ("_next", "_readers", "inbox", "module")

    def __init__(self, module: SmBtlModule, inbox: Inbox) -> None:
        self.module = module
        #: The inbox read; :data:`CLOSED` once the module finalized (it has the two counters
        #: ``poll`` reads first, and they agree, so nothing past them is ever reached).
        self.inbox: Inbox = inbox
        self._next = 0  # the tail once the polled record is released
        #: For each header layout :meth:`poll_header` was asked about: the struct of the
        #: record header followed by it, and zeros for its fields.
        self._readers: dict[struct.Struct, tuple[struct.Struct, tuple[int, ...]]] = {}

    def poll(self) -> tuple[int, memoryview] | None:
        """The next record, ``(tag, payload)``, left in place; None if nothing has arrived.

        None also while the module delivers records itself (a receive running inside one of
        its callbacks must not read the ring the pass is reading).
        """
        inbox = self.inbox
        tail = inbox.counter
        ctl = inbox.ctl
        if ctl[_C_HEAD] == tail or self.module._busy:
            return None
        data = inbox.data
        pos = tail & inbox.mask
        length, kind = _UNPACK(data, pos)
        if kind == _SKIP:  # the sender wrapped: consume the filler, read from the start
            tail += inbox.size - pos
            inbox.counter = tail
            inbox.publish[_C_TAIL] = tail
            if ctl[_C_HEAD] == tail:
                return None
            pos = 0
            length, kind = _UNPACK(data, 0)
        self._next = tail + ((15 + length) & ~7)  # record_size(length), inlined
        start = pos + 8
        return kind, data[start : start + length]

    def poll_header(self, header: struct.Struct) -> tuple[tuple[int, ...], memoryview] | None:
        """:meth:`poll`, the record header and ``header`` unpacked by one ``struct`` (see
        :class:`~ompy.opal.mca.btl.PeerRing`); the payload is sliced once, after ``header``."""
        inbox = self.inbox
        tail = inbox.counter
        ctl = inbox.ctl
        if ctl[_C_HEAD] == tail or self.module._busy:
            return None
        reader = self._readers.get(header)
        if reader is None:
            reader = self._reader(header)
        both, zeros = reader
        data = inbox.data
        size = inbox.size
        pos = tail & inbox.mask
        if pos + both.size > size:  # a short record at the ring's end (a MATCH never is)
            fields: tuple[int, ...] = _UNPACK(data, pos) + zeros
        else:
            fields = both.unpack_from(data, pos)
        if fields[1] == _SKIP:  # the sender wrapped: consume the filler, read from the start
            tail += size - pos
            inbox.counter = tail
            inbox.publish[_C_TAIL] = tail
            if ctl[_C_HEAD] == tail:
                return None
            pos = 0
            fields = both.unpack_from(data, 0)
        length = fields[0]
        self._next = tail + ((15 + length) & ~7)  # record_size(length), inlined
        start = pos + 8
        return fields, data[start + header.size : start + length]

    def _reader(self, header: struct.Struct) -> tuple[struct.Struct, tuple[int, ...]]:
        order = L.RECORD.format[:1]
        if header.format[:1] not in "!>" or order not in "!>":
            raise ValueError(
                f"sm: a header of format {header.format!r} cannot be read with the record "
                f"header ({L.RECORD.format!r}): both must be in network byte order"
            )
        zeros = (0,) * len(header.unpack(bytes(header.size)))
        reader = self._readers[header] = (
            struct.Struct(L.RECORD.format + header.format[1:]),
            zeros,
        )
        return reader

    def release(self) -> None:
        """Free the record :meth:`poll` returned; wake its sender if it waits for room."""
        inbox = self.inbox
        tail = self._next
        inbox.counter = tail
        inbox.publish[_C_TAIL] = tail
        if inbox.ctl[_C_WAITING] and inbox.endpoint is not None:
            self.module.ring_bell(inbox.endpoint)

    def close(self) -> None:
        """The module finalizes: from now on nothing arrives (the views are let go)."""
        self.inbox = CLOSED  # type: ignore[assignment]
