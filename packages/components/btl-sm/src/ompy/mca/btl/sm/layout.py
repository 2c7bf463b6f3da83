"""The layout of an sm receive segment: a header, one control block and one ring per sender.

Every process owns one segment and only *receives* through it: the process with local rank
``s`` writes into ring ``s`` of its peer's segment.  All offsets are multiples of 64 (a cache
line), and every shared counter is an aligned 8-byte word.

::

    header   (u64 words)  magic, version, ring_count, fbox_size, owner pid, protocol,
                          expected attachers, closed, then one "attached" word per local rank
    control  ring_count blocks of 128 bytes:
               line 0, written by the sender:   head (bytes published), waiting (for space)
               line 1, written by the receiver: tail (bytes consumed), sleeping
    rings    ring_count rings of fbox_size bytes (a power of two)

A ring carries records of an 8-byte header (payload length u32, tag u16, 2 spare bytes; network
byte order, like the PML headers that follow it, so that one ``struct`` packs both) and the
payload, padded to 8 bytes.  A record never wraps: when it does not fit before the end, the
sender publishes a ``SKIP`` record that fills the rest and starts again at offset 0.
"""

from __future__ import annotations

import struct

import attrs

MAGIC = int.from_bytes(b"ompy-sm\0", "little")
VERSION = 2  # 2: record headers in network byte order (packed with the PML's header)

# header words
H_MAGIC, H_VERSION, H_RINGS, H_FBOX, H_PID, H_PROTOCOL, H_EXPECTED, H_CLOSED = range(8)
H_ATTACHED = 8  # one word per local rank from here

PROTOCOL_LOCK_FREE = 1
PROTOCOL_LOCKED = 2

# control-block words (16 per block)
C_HEAD, C_WAITING = 0, 1
C_TAIL, C_SLEEPING = 8, 9
CONTROL_BLOCK = 128
CONTROL_WORDS = CONTROL_BLOCK // 8

RECORD = struct.Struct("!IHxx")
RECORD_SIZE = RECORD.size
SKIP = 0x100  # a record kind no BTL tag (0..255) can take
LINE = 64


def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to


def record_size(payload: int) -> int:
    """Ring bytes one record of ``payload`` bytes takes."""
    return (RECORD_SIZE + payload + 7) & ~7


@attrs.frozen
class Layout:
    """Where everything is in a segment with ``ring_count`` rings of ``fbox_size`` bytes."""

    ring_count: int
    fbox_size: int

    def __attrs_post_init__(self) -> None:
        if self.ring_count < 1:
            raise ValueError(f"an sm segment needs at least one ring, got {self.ring_count}")
        size = self.fbox_size
        if size < 1024 or size & (size - 1):
            raise ValueError(
                f"btl_sm_fbox_size must be a power of two of at least 1024 bytes, got {size}"
            )

    @property
    def header_size(self) -> int:
        return _align(8 * (H_ATTACHED + self.ring_count), LINE)

    @property
    def control_offset(self) -> int:
        return self.header_size

    def control(self, ring: int) -> int:
        """Byte offset of ring ``ring``'s control block."""
        return self.control_offset + ring * CONTROL_BLOCK

    @property
    def rings_offset(self) -> int:
        return _align(self.control_offset + self.ring_count * CONTROL_BLOCK, 4096)

    def ring(self, index: int) -> int:
        """Byte offset of ring ``index``'s data."""
        return self.rings_offset + index * self.fbox_size

    @property
    def size(self) -> int:
        return self.rings_offset + self.ring_count * self.fbox_size
