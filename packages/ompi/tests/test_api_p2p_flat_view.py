"""The buffer export of ``Send``/``Recv``'s hot path (``_flat_view``) agrees with ``parse_buffer``.

``Send`` and ``Recv`` hand the PML a flat byte view when the buffer is a whole contiguous
numpy array, bytes or bytearray of a basic type, and otherwise go through ``parse_buffer``
(and its errors).  Whatever the buffer, the shortcut must either decline or give exactly the
bytes ``parse_buffer`` gives, as a flat, writable-when-receiving view of the same memory.
"""

from __future__ import annotations

import array

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.ompi.api.plain_buffers import flat_view as _flat_view
from ompy.ompi.datatype.buffer import parse_buffer

DTYPES = ["u1", "i1", "?", "<i2", "<u4", "<i8", "<f4", "<f8", ">i4", "<c16", "S3", "<U2"]


@st.composite
def arrays(draw: st.DrawFn) -> np.ndarray:
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=0, max_size=3)))
    base = np.arange(int(np.prod(shape, dtype=np.int64)) * 2 + 4, dtype=np.uint8)
    data = np.frombuffer(base.tobytes() * dtype.itemsize, dtype=np.uint8)
    flat = data[: int(np.prod(shape, dtype=np.int64)) * dtype.itemsize].view(dtype).copy()
    array_ = flat.reshape(shape)
    if array_.ndim and draw(st.booleans()):
        array_ = array_[::2]  # strided unless it has one element or none
    if draw(st.booleans()):
        array_ = np.asfortranarray(array_)
    if draw(st.booleans()):
        array_.flags.writeable = False
    return array_


BUFFERS = st.one_of(
    arrays(),
    st.binary(max_size=40),
    st.binary(max_size=40).map(bytearray),
    st.binary(max_size=40).map(memoryview),
    st.lists(st.integers(-100, 100), max_size=5).map(lambda xs: array.array("i", xs)),
)


@settings(max_examples=300, deadline=None)
@given(buf=BUFFERS, readonly=st.booleans())
def test_the_flat_view_is_parse_buffers_bytes_or_nothing(buf, readonly):
    view = _flat_view(buf, readonly)
    if view is None:
        return  # Send/Recv use parse_buffer itself
    spec = parse_buffer(buf, readonly=readonly)
    assert spec.convertor is None, "only contiguous buffers are taken"
    assert view.format == "B" and view.ndim == 1 and view.c_contiguous
    assert bytes(view) == bytes(spec.view)
    if not readonly:
        assert not view.readonly, "a receive buffer's view must be writable"
        if len(view):
            view[0] ^= 0xFF  # the same memory: the receive lands in the caller's buffer
            assert bytes(spec.view)[0] == view[0]


@pytest.mark.parametrize(
    "buf",
    [
        np.zeros(4, np.uint8),
        np.zeros((2, 3), np.float64),
        np.zeros(3, np.int32),
        bytearray(b"abc"),
        b"abc",
    ],
    ids=["u1", "f8 2-d", "i4", "bytearray", "bytes"],
)
def test_the_common_send_buffers_take_the_shortcut(buf):
    view = _flat_view(buf, True)
    assert view is not None and view.nbytes == memoryview(buf).nbytes


@pytest.mark.parametrize(
    "buf, readonly",
    [
        (b"abc", False),  # bytes cannot be received into: parse_buffer says so
        (np.zeros(4, np.uint8)[::2], True),  # strided: the convertor's
        (np.zeros(2, ">i4"), True),  # foreign byte order: parse_buffer decides
        (np.zeros((3, 0), np.uint8), True),  # a zero in the shape cannot be cast
        (memoryview(b"abc"), True),  # not one of the three types
        ([np.zeros(4, np.uint8), 2], True),  # a message specification
    ],
)
def test_everything_else_goes_through_parse_buffer(buf, readonly):
    assert _flat_view(buf, readonly) is None


def test_a_read_only_array_is_sent_but_not_received_into():
    buf = np.zeros(4, np.uint8)
    buf.flags.writeable = False
    assert _flat_view(buf, True) is not None
    assert _flat_view(buf, False) is None
