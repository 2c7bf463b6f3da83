"""The segment layout: aligned, non-overlapping regions; slices that cover every element."""

from __future__ import annotations

import itertools

import pytest

from ompy.mca.coll.sm import layout as L  # noqa: N812 (read as "the layout")


@pytest.mark.parametrize("ranks", [1, 2, 9])
def test_regions_are_aligned_and_disjoint(ranks):
    layout = L.Layout(ranks, 8192, 3)
    controls = [layout.control(r) for r in range(ranks)]
    assert controls[0] >= L.HEADER and all(c % 128 == 0 for c in controls)
    assert layout.data_offset >= controls[-1] + L.BLOCK
    slots = sorted(layout.slot(b, r) for b in range(3) for r in range(ranks))
    assert all(s % L.PAGE == 0 for s in slots)
    assert all(b - a == 8192 for a, b in itertools.pairwise(slots))
    assert layout.size == slots[-1] + 8192


@pytest.mark.parametrize(
    ("fragment", "depth", "message"),
    [(1000, 2, "multiple of 4096"), (0, 2, "multiple of 4096"), (4096, 1, "at least 2")],
)
def test_bad_layouts_are_refused_with_the_parameter_name(fragment, depth, message):
    with pytest.raises(ValueError, match=message):
        L.Layout(2, fragment, depth)


@pytest.mark.parametrize("itemsize", [1, 4, 8, 12, 16])
@pytest.mark.parametrize("ranks", [1, 2, 3, 7])
@pytest.mark.parametrize("count", [0, 1, 5, 64, 1000, 4097])
def test_slices_cover_every_element_once_on_cache_line_boundaries(count, ranks, itemsize):
    bounds = L.slices(count, ranks, itemsize)
    assert len(bounds) == ranks + 1
    assert bounds[0] == 0 and bounds[-1] == count
    assert all(a <= b for a, b in itertools.pairwise(bounds))
    if itemsize in (1, 4, 8, 16):
        assert all(b * itemsize % 64 == 0 for b in bounds[:-1])
