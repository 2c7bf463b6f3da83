"""drop_sent: after a partial write, what is left of the buffers is exactly the unsent tail."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ompy.mca.btl.tcp.connection import drop_sent

buffer_lists = st.lists(st.binary(min_size=1, max_size=12), max_size=5)


@given(buffer_lists, st.integers(min_value=0, max_value=80))
def test_the_rest_is_the_unsent_tail_and_the_overflow_is_returned(buffers, count):
    whole = b"".join(buffers)
    rest = list(buffers)
    left_over = drop_sent(rest, count)
    assert b"".join(bytes(buffer) for buffer in rest) == whole[count:]
    assert left_over == max(0, count - len(whole))
    assert all(len(buffer) for buffer in rest)
