"""Free lists: reuse, growth on demand, the bound, and errors that say what to do."""

from __future__ import annotations

import pytest

from ompy.opal.freelist import FreeList, FreeListExhaustedError


def test_initial_objects_are_created_up_front():
    pool = FreeList(bytearray, initial=3)
    assert pool.allocated == 3
    assert pool.available == 3


def test_returned_objects_are_reused_last_in_first_out():
    pool = FreeList(lambda: bytearray(4), initial=2)
    first = pool.get()
    second = pool.get()
    pool.put(first)
    pool.put(second)
    assert pool.get() is second
    assert pool.get() is first
    assert pool.allocated == 2


def test_an_empty_pool_grows_by_its_increment():
    pool = FreeList(object, initial=0, increment=4)
    item = pool.get()
    assert item is not None
    assert pool.allocated == 4
    assert pool.available == 3


def test_growth_stops_at_the_maximum():
    pool = FreeList(object, initial=1, increment=4, maximum=3)
    items = [pool.get() for _ in range(3)]
    assert all(item is not None for item in items)
    assert pool.get() is None
    assert pool.allocated == 3
    pool.put(items[0])
    assert pool.get() is items[0]


def test_take_on_an_exhausted_pool_is_a_clear_error():
    pool = FreeList(object, maximum=1, name="test descriptors")
    pool.take()
    with pytest.raises(FreeListExhaustedError, match="test descriptors is exhausted"):
        pool.take()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"initial": -1}, "initial size"),
        ({"increment": 0}, "increment"),
        ({"initial": 5, "maximum": 2}, "maximum"),
    ],
)
def test_bad_sizes_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FreeList(object, **kwargs)
