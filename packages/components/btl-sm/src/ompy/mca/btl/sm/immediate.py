"""The immediate send of one peer and one header layout: the send half of the fast path.

``sendi`` receives the PML's header as a bytes object, which was packed for the call and is
then copied into the ring after the record header.  The sender this module makes
(:meth:`SmBtlModule.immediate <ompy.mca.btl.sm.module.SmBtlModule.immediate>`, bound once per
peer by the PML) instead packs the record header and the PML's header together with one
``struct`` straight into the ring, copies the payload, and publishes: one pack and one copy
per message, nothing allocated.  A record that would wrap, or does not fit, goes through the
module's general write (which skips to the ring's start, or answers False to queue).

It holds the endpoint, not the ring: the ring's views are let go when the peer is released,
and a sender kept by a communicator must not keep the peer's segment mapped.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ompy.opal.mca.btl import ImmediateSend

from . import layout as L  # noqa: N812 (read as "the layout")

if TYPE_CHECKING:
    from .module import Ring, SmBtlModule, SmEndpoint

_C_TAIL, _C_SLEEPING, _C_HEAD = L.C_TAIL, L.C_SLEEPING, L.C_HEAD
_NETWORK = frozenset("!>")


def combinable(header: struct.Struct) -> bool:
    """Whether ``header`` can be packed with the record header in one struct (same order)."""
    return header.format[:1] in _NETWORK and L.RECORD.format[:1] in _NETWORK


def immediate_sender(
    module: SmBtlModule, endpoint: SmEndpoint, header: struct.Struct, tag: int, limit: int
) -> ImmediateSend:
    """The lock-free ring's immediate send to ``endpoint`` (see the module documentation)."""
    pack = struct.Struct(L.RECORD.format + header.format[1:]).pack_into
    header_pack = header.pack
    at = L.RECORD_SIZE + header.size  # where the payload starts in the record
    size_of_header = header.size
    limit = min(limit, module.max_send_size)
    write = module._write_unlocked
    ring_bell = module.ring_bell

    def send(payload: memoryview, /, *fields: int) -> bool:
        length = size_of_header + len(payload)
        if endpoint.queue or endpoint.dead or length > limit:
            if endpoint.dead:
                raise module._unreachable(endpoint)
            return False
        ring: Ring = endpoint.outbox  # type: ignore[assignment] # set while not dead
        head = ring.counter
        need = (15 + length) & ~7  # record_size(length), inlined
        pos = head & ring.mask
        ctl = ring.ctl
        if pos + need > ring.size or ring.size - (head - ctl[_C_TAIL]) < need:
            return write(endpoint, (header_pack(*fields), payload), length, tag)
        data = ring.data
        pack(data, pos, length, tag, *fields)
        start = pos + at
        data[start : start + len(payload)] = payload
        head += need
        ctl[_C_HEAD] = head  # the publishing store (see the module ``module``)
        ring.counter = head
        if ctl[_C_SLEEPING]:
            ring_bell(endpoint)
        return True

    return send
