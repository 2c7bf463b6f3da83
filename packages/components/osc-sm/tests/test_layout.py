"""The segment layout: every rank computes the same offsets from the same sizes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ompy.mca.osc.sm import layout as L  # noqa: N812


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=9))
def test_contiguous_memory_follows_the_previous_rank(sizes: list[int]) -> None:
    layout = L.Layout(tuple(sizes), contiguous=True)
    offsets = layout.offsets
    assert offsets[0] == layout.data_offset
    assert layout.data_offset % L.PAGE == 0
    for rank in range(1, len(sizes)):
        assert offsets[rank] == offsets[rank - 1] + sizes[rank - 1]
    assert layout.size >= offsets[-1] + sizes[-1]


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=9))
def test_noncontiguous_memory_starts_on_pages_and_never_overlaps(sizes: list[int]) -> None:
    layout = L.Layout(tuple(sizes), contiguous=False)
    ends = [start + size for start, size in zip(layout.offsets, sizes, strict=True)]
    assert all(start % L.PAGE == 0 for start in layout.offsets)
    assert all(ends[r] <= layout.offsets[r + 1] for r in range(len(sizes) - 1))


@given(st.integers(1, 64))
def test_control_blocks_hold_every_counter_in_whole_lines(ranks: int) -> None:
    layout = L.Layout((8,) * ranks, contiguous=True)
    assert layout.stride * 8 % L.LINE == 0
    assert layout.stride >= L.POST + 2 * ranks
    assert layout.complete == L.POST + ranks
    assert L.HEADER + ranks * layout.stride * 8 <= layout.data_offset


def test_lock_bytes_lie_past_the_end_of_the_segment() -> None:
    layout = L.Layout((100, 0, 7), contiguous=True)
    assert [layout.lock_byte(r) for r in range(3)] == [
        layout.size,
        layout.size + 1,
        layout.size + 2,
    ]
