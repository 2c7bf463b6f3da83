"""ob1's wire headers: fixed ``struct`` layouts in network byte order.

Every fragment ob1 hands to a BTL starts with one of these headers; its first byte is the
header type, its second a set of flags.  The layouts follow Open MPI's ``pml_ob1_hdr.h``:

======  ==========================================================================  =====
header  fields after (type, flags)                                                  bytes
======  ==========================================================================  =====
MATCH   seq, ctx, src, tag — an eager message, entirely in this fragment             16
RNDV    MATCH + msg_length, src_req — first fragment of a long message               32
RGET    RNDV + frag, src_ptr — rendezvous offering the receiver an RDMA get          48
ACK     src_req, dst_req, send_offset, send_size — receiver matched, send the rest   40
FRAG    frag_offset, src_req, dst_req — a later fragment of a long message           32
PUT     src_req, dst_req, rdma_offset, dst_ptr, size — where the sender may put      48
FIN     status, frag, size — an RDMA transfer finished                               24
CANCEL  ctx, src, seq, src_req, token — the sender asks to withdraw a message         32
CANCELD token — the answer to CANCEL; flag FLAG_WITHDRAWN if it was withdrawn         16
======  ==========================================================================  =====

CANCEL and CANCELD are ompy's own (Open MPI's ob1 does not cancel sends; MPICH does it with
the same request/answer pair): a send is withdrawn only while its message waits unmatched in
the receiver's unexpected queue, so the receiver, which owns the matching, decides.  CANCEL
names the message by (ctx, src) and either its sequence number (an eager message) or, with
FLAG_BY_REQUEST, the sender's request id (a rendezvous).

The match part carries the communicator's context id (unsigned 32 bits; Open MPI uses 16),
the sender's rank in the communicator (signed 32), the tag (signed 32: negative tags are the
library's own traffic) and the 16-bit sequence number of the (communicator, sender) pair.
Request and fragment ids are unsigned 64-bit tokens chosen by the side that owns the object;
``*_ptr`` fields are addresses for the BTLs that read or write remote memory.  Every layout is a
multiple of 8 bytes so the payload after it stays 8-byte aligned.

On the hot path bind the struct's methods once (``pack = MATCH.struct.pack_into``); the
:class:`Header` methods add only the type byte and an error message that names the field.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, Final

import attrs

# Header types: Open MPI's values (MCA_BTL_TAG_PML + n), so a packet capture reads the same.
TYPE_MATCH: Final = 0x41
TYPE_RNDV: Final = 0x42
TYPE_RGET: Final = 0x43
TYPE_ACK: Final = 0x44
TYPE_FRAG: Final = 0x46
TYPE_PUT: Final = 0x48
TYPE_FIN: Final = 0x49
TYPE_CANCEL: Final = 0x4A
TYPE_CANCELED: Final = 0x4B

#: The sender waits for an ACK of the match (synchronous sends, rendezvous).
FLAG_ACK: Final = 0x01
#: The sender's data is contiguous in memory (the receiver may get it in one piece).
FLAG_CONTIG: Final = 0x08
#: Do not use RDMA for the rest of this message; send FRAGs.
FLAG_NORDMA: Final = 0x10

#: CANCEL names a rendezvous message by the sender's request id (else by sequence number).
FLAG_BY_REQUEST: Final = 0x01
#: CANCELD: the message was withdrawn before anything matched it.
FLAG_WITHDRAWN: Final = 0x01
#: Width of the sequence numbers in the match part; they wrap modulo 2**SEQ_BITS.
SEQ_BITS: Final = 16
#: Sequence numbers are kept modulo 2**SEQ_BITS: ``(seq + 1) & SEQ_MASK``.
SEQ_MASK: Final = (1 << SEQ_BITS) - 1


@attrs.frozen
class Header:
    """One header layout: its type byte, its field names and its precompiled struct.

    ``fields`` names every value of the unpacked tuple, the type included, in order.
    """

    name: str
    type: int
    fields: tuple[str, ...]
    struct: struct.Struct

    @property
    def size(self) -> int:
        """Bytes on the wire."""
        return self.struct.size

    def pack_into(self, buffer: Any, offset: int, *values: int) -> None:
        """Write the header (type byte added) at ``offset``; values in ``fields[1:]`` order."""
        try:
            self.struct.pack_into(buffer, offset, self.type, *values)
        except struct.error as error:
            raise self._explain(values, error) from None

    def pack(self, *values: int) -> bytes:
        """The header as bytes; values in ``fields[1:]`` order."""
        try:
            return self.struct.pack(self.type, *values)
        except struct.error as error:
            raise self._explain(values, error) from None

    def unpack_from(self, buffer: Any, offset: int = 0) -> tuple[int, ...]:
        """Every field at ``offset``, type first (``fields`` order)."""
        return self.struct.unpack_from(buffer, offset)

    def as_dict(self, values: tuple[int, ...]) -> dict[str, int]:
        """Name the values of an unpacked header (for diagnostics, not the hot path)."""
        return dict(zip(self.fields, values, strict=True))

    def _explain(self, values: tuple[int, ...], error: struct.error) -> ValueError:
        names = self.fields[1:]
        if len(values) != len(names):
            return ValueError(
                f"the {self.name} header takes {len(names)} values ({', '.join(names)}), "
                f"got {len(values)}"
            )
        limits = _limits(self.struct.format)
        for name, value, (low, high) in zip(names, values, limits[1:], strict=True):
            if not isinstance(value, int) or not low <= value <= high:
                return ValueError(
                    f"the {self.name} header's field {name} must be an int in {low}..{high}, "
                    f"got {value!r}"
                )
        return ValueError(f"cannot pack the {self.name} header: {error}")


def _limits(fmt: str) -> list[tuple[int, int]]:
    """(low, high) of each value of a struct format of B/H/I/Q/i codes and pad bytes."""
    ranges = {
        "B": (0, 2**8 - 1),
        "H": (0, 2**16 - 1),
        "I": (0, 2**32 - 1),
        "Q": (0, 2**64 - 1),
        "i": (-(2**31), 2**31 - 1),
    }
    limits, repeat = [], ""
    for code in fmt.lstrip("!"):
        if code.isdigit():
            repeat += code
            continue
        if code in ranges:
            limits.extend([ranges[code]] * int(repeat or 1))
        repeat = ""
    return limits


_MATCH_FIELDS = ("type", "flags", "seq", "ctx", "src", "tag")
_MATCH_FORMAT = "!BBHIii"

MATCH: Final = Header("MATCH", TYPE_MATCH, _MATCH_FIELDS, struct.Struct(_MATCH_FORMAT))
RNDV: Final = Header(
    "RNDV",
    TYPE_RNDV,
    (*_MATCH_FIELDS, "msg_length", "src_req"),
    struct.Struct(_MATCH_FORMAT + "QQ"),
)
RGET: Final = Header(
    "RGET",
    TYPE_RGET,
    (*_MATCH_FIELDS, "msg_length", "src_req", "frag", "src_ptr"),
    struct.Struct(_MATCH_FORMAT + "QQQQ"),
)
ACK: Final = Header(
    "ACK",
    TYPE_ACK,
    ("type", "flags", "src_req", "dst_req", "send_offset", "send_size"),
    struct.Struct("!BB6xQQQQ"),
)
FRAG: Final = Header(
    "FRAG",
    TYPE_FRAG,
    ("type", "flags", "frag_offset", "src_req", "dst_req"),
    struct.Struct("!BB6xQQQ"),
)
PUT: Final = Header(
    "PUT",
    TYPE_PUT,
    ("type", "flags", "src_req", "dst_req", "rdma_offset", "dst_ptr", "size"),
    struct.Struct("!BB6xQQQQQ"),
)
FIN: Final = Header(
    "FIN",
    TYPE_FIN,
    ("type", "flags", "status", "frag", "size"),
    struct.Struct("!BB2xiQQ"),
)

CANCEL: Final = Header(
    "CANCEL",
    TYPE_CANCEL,
    ("type", "flags", "ctx", "src", "seq", "src_req", "token"),
    struct.Struct("!BB2xIiH2xQQ"),
)
CANCELED: Final = Header(
    "CANCELD",
    TYPE_CANCELED,
    ("type", "flags", "token"),
    struct.Struct("!BB6xQ"),
)

#: Every header by its type byte.
HEADERS: Final[Mapping[int, Header]] = {
    header.type: header for header in (MATCH, RNDV, RGET, ACK, FRAG, PUT, FIN, CANCEL, CANCELED)
}


def header_of(buffer: Any, offset: int = 0) -> Header:
    """The layout of the header at ``offset``, from its type byte; a ValueError if unknown."""
    try:
        kind = buffer[offset]
    except IndexError:
        raise ValueError(f"no ob1 header at offset {offset}: the fragment is too short") from None
    header = HEADERS.get(kind)
    if header is None:
        known = ", ".join(f"{h.name}=0x{t:02x}" for t, h in HEADERS.items())
        raise ValueError(f"unknown ob1 header type 0x{kind:02x} at offset {offset} ({known})")
    return header


def decode(buffer: Any, offset: int = 0) -> tuple[Header, dict[str, int]]:
    """The header at ``offset`` with named fields (for diagnostics and tests)."""
    header = header_of(buffer, offset)
    if len(buffer) - offset < header.size:
        raise ValueError(
            f"truncated {header.name} header at offset {offset}: {header.size} bytes needed, "
            f"{len(buffer) - offset} present"
        )
    return header, header.as_dict(header.unpack_from(buffer, offset))
