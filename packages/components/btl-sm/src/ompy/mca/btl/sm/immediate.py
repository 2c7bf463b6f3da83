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

import functools
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ompy.opal.mca.btl import ImmediateSend

from . import layout as L  # noqa: N812 (read as "the layout")

if TYPE_CHECKING:
    from .module import SmBtlModule, SmEndpoint

_NETWORK = frozenset("!>")


def combinable(header: struct.Struct) -> bool:
    """Whether ``header`` can be packed with the record header in one struct (same order)."""
    return header.format[:1] in _NETWORK and L.RECORD.format[:1] in _NETWORK


def immediate_sender(
    module: SmBtlModule, endpoint: SmEndpoint, header: struct.Struct, tag: int, limit: int
) -> ImmediateSend:
    """The lock-free ring's immediate send to ``endpoint`` (see the module documentation)."""
    arity = len(header.unpack(bytes(header.size)))
    return _factory(arity)(
        module,
        endpoint,
        struct.Struct(L.RECORD.format + header.format[1:]).pack_into,
        header.pack,
        header.size,
        tag,
        min(limit, module.max_send_size),
    )


#: The sender, written once for any number of header fields.  It is compiled per number of
#: fields (:func:`_factory`) so that the fields are plain positional parameters: a starred
#: ``*fields`` (collected, then spread into ``pack_into``) costs about 0.12 µs per message,
#: a third of this frame.  ``{fields}`` is ``f0, f1, ...``.
_SENDER = """
def make(module, endpoint, pack, header_pack, size_of_header, tag, limit):
    at = RECORD_SIZE + size_of_header  # where the payload starts in the record
    write = module._write_unlocked
    ring_bell = module.ring_bell

    def send(payload, /, {fields}):
        length = size_of_header + len(payload)
        if endpoint.queue or endpoint.dead or length > limit:
            if endpoint.dead:
                raise module._unreachable(endpoint)
            return False
        ring = endpoint.outbox  # set while the peer is not dead
        head = ring.counter
        need = (15 + length) & ~7  # record_size(length), inlined
        pos = head & ring.mask
        ctl = ring.ctl
        if pos + need > ring.size or ring.size - (head - ctl[C_TAIL]) < need:
            # it wraps, or does not fit: the general write (skip record, or False to queue)
            return write(endpoint, (header_pack({fields}), payload), length, tag)
        data = ring.data
        pack(data, pos, length, tag, {fields})
        start = pos + at
        data[start : start + len(payload)] = payload
        head += need
        ctl[C_HEAD] = head  # the publishing store (see the sm module's documentation)
        ring.counter = head
        if ctl[C_SLEEPING]:
            ring_bell(endpoint)
        return True

    return send
"""


@functools.cache
def _factory(arity: int) -> Callable[..., ImmediateSend]:
    """The maker of senders of ``arity`` header fields (compiled once per arity)."""
    fields = ", ".join(f"f{index}" for index in range(arity))
    namespace: dict[str, Any] = {
        "RECORD_SIZE": L.RECORD_SIZE,
        "C_HEAD": L.C_HEAD,
        "C_TAIL": L.C_TAIL,
        "C_SLEEPING": L.C_SLEEPING,
    }
    code = compile(_SENDER.format(fields=fields), f"<sm immediate send, {arity} fields>", "exec")
    exec(code, namespace)  # our own template: nothing from outside goes into it
    return namespace["make"]
