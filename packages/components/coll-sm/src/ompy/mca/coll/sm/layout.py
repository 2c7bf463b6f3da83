"""The layout of a communicator's sm segment: a header, one control block per rank, data slots.

::

    header    128 bytes: magic, version, ranks, fragment size, pipeline depth (u64 words)
    control   one block of 128 bytes per rank (two cache lines, so the adjacent-line
              prefetcher does not make neighbours share), written only by its rank:
                READY    the last step whose input this rank has put in its slot
                REDUCED  the last step whose slice this rank has combined (large reductions)
                DONE     the last step this rank has finished with entirely
                SLEEPING 1 while this rank sleeps in the progress engine (ring its doorbell)
    data      ``depth`` sets of one slot per rank, ``fragment`` bytes each, page aligned:
              slot(step, rank) = data + ((step % depth) * ranks + rank) * fragment

Every word is an aligned 8-byte word that only grows (the steps of one communicator are
numbered from 1 and never reset), so "has everyone reached step t" is ``min(words) >= t``: no
flag ever has to be cleared, which is what a sense-reversing flag achieves with one bit.
"""

from __future__ import annotations

import attrs

MAGIC = int.from_bytes(b"ompycoll", "little")
VERSION = 1

# header words
H_MAGIC, H_VERSION, H_RANKS, H_FRAGMENT, H_DEPTH = range(5)
HEADER = 128

# control-block words
READY, REDUCED, DONE, SLEEPING = 0, 1, 2, 3
BLOCK = 128
BLOCK_WORDS = BLOCK // 8

#: Smallest fragment: one page (slots stay page aligned, so they start on a cache line).
MIN_FRAGMENT = 4096
PAGE = 4096


def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to


@attrs.frozen
class Layout:
    """Where everything is in the segment of a communicator of ``ranks`` ranks."""

    ranks: int
    fragment: int
    depth: int

    def __attrs_post_init__(self) -> None:
        if self.ranks < 1:
            raise ValueError(f"an sm coll segment serves at least one rank, got {self.ranks}")
        if self.fragment < MIN_FRAGMENT or self.fragment % PAGE:
            raise ValueError(
                f"coll_sm_fragment_size must be a multiple of {PAGE} bytes (at least "
                f"{MIN_FRAGMENT}), got {self.fragment}"
            )
        if self.depth < 2:
            raise ValueError(
                f"coll_sm_pipeline_depth must be at least 2 (one fragment is filled while "
                f"the previous one is read), got {self.depth}"
            )

    @property
    def control_offset(self) -> int:
        return HEADER

    def control(self, rank: int) -> int:
        """Byte offset of ``rank``'s control block."""
        return HEADER + rank * BLOCK

    @property
    def control_size(self) -> int:
        return self.ranks * BLOCK

    @property
    def data_offset(self) -> int:
        return _align(HEADER + self.control_size, PAGE)

    def slot(self, buffer: int, rank: int) -> int:
        """Byte offset of ``rank``'s slot in slot set ``buffer`` (``step % depth``)."""
        return self.data_offset + (buffer * self.ranks + rank) * self.fragment

    @property
    def size(self) -> int:
        return self.data_offset + self.depth * self.ranks * self.fragment


def slices(count: int, ranks: int, itemsize: int) -> list[int]:
    """Element bounds of the ``ranks`` slices of ``count`` elements that ranks combine in parallel.

    Slice ``j`` is ``bounds[j] .. bounds[j+1]``.  Bounds fall on 64-byte boundaries where the
    element size allows it, so each rank's slice starts on its own cache line; trailing slices
    may be empty when ``count`` is small.
    """
    quantum = 1
    while (quantum * itemsize) % 64 and quantum < 64:
        quantum *= 2
    if (quantum * itemsize) % 64:
        quantum = 1  # an element size without a power-of-two factor: no alignment to gain
    bounds = [min(count, (count * j // ranks) // quantum * quantum) for j in range(ranks)]
    bounds.append(count)
    return bounds
