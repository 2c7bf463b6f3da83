"""Where everything lives in a window's segment: header, control words, every rank's memory.

One segment per window, made by the window's rank 0 and mapped by every rank::

    [header: 64 bytes][control blocks: one per rank][pad to a page][rank 0's memory][rank 1's]...

Each rank's control block holds 8-byte counters that only grow and that each have exactly one
writer, so no atomic read-modify-write is ever needed on them:

* ``FENCE``: how many fences (and window barriers) this rank has entered; written by the rank;
* ``POST + t``: how many exposure epochs rank ``t`` has posted to this rank; written by ``t``;
* ``COMPLETE + o``: how many access epochs rank ``o`` has completed towards this rank;
  written by ``o``.

A block is rounded up to whole cache lines so that ranks do not write into one line.

Memory of ``Win.Allocate_shared`` is contiguous across ranks, as MPI requires by default (rank
``i``'s first byte follows rank ``i-1``'s last); with the info hint
``alloc_shared_noncontig=true``, and for ``Win.Allocate``, each rank's memory starts on its own
page instead.  The passive-target lock of rank ``r`` is the record lock on byte
``size + r`` of the file, past its end (:mod:`.locks`).
"""

from __future__ import annotations

import attrs

#: Bytes of a page: the data starts on one, so its alignment suits every element type.
PAGE = 4096
#: Bytes of a cache line: the unit of a control block.
LINE = 64
#: The header (words: magic, version, ranks) in front of the control blocks.
HEADER = LINE
MAGIC = 0x6F6D70792D6F7363  # "ompy-osc"
VERSION = 1
H_MAGIC, H_VERSION, H_RANKS = 0, 1, 2

#: Word of the fence counter in a control block.
FENCE = 0
#: First word of the post counters (one per rank) in a control block.
POST = 1


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


@attrs.frozen
class Layout:
    """The offsets of one window's segment, computed alike by every rank from the same sizes.

    ``sizes`` are the bytes each rank asked for, in window rank order; ``contiguous`` says
    whether rank memories follow one another without gaps.
    """

    sizes: tuple[int, ...]
    contiguous: bool

    @property
    def ranks(self) -> int:
        return len(self.sizes)

    @property
    def complete(self) -> int:
        """First word of the complete counters in a control block."""
        return POST + self.ranks

    @property
    def stride(self) -> int:
        """Words of one rank's control block (whole cache lines)."""
        return _round_up(POST + 2 * self.ranks, LINE // 8)

    @property
    def control_offset(self) -> int:
        return HEADER

    @property
    def data_offset(self) -> int:
        """Byte where rank 0's memory starts (a page boundary)."""
        return _round_up(HEADER + self.ranks * self.stride * 8, PAGE)

    @property
    def offsets(self) -> tuple[int, ...]:
        """Byte of the segment where each rank's memory starts."""
        offsets = []
        at = self.data_offset
        for size in self.sizes:
            offsets.append(at)
            at += size if self.contiguous else _round_up(size, PAGE)
        return tuple(offsets)

    @property
    def size(self) -> int:
        """Bytes of the whole segment."""
        last = self.offsets[-1] + self.sizes[-1]
        return max(last, self.data_offset)

    def lock_byte(self, rank: int) -> int:
        """The file byte whose record lock is ``rank``'s passive-target lock."""
        return self.size + rank
