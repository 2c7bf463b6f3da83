"""The object codec: mpi4py's Pickle (dumps/loads, PROTOCOL, THRESHOLD) and the one framing."""

from __future__ import annotations

import json
import marshal
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.opal import codec
from ompy.opal.codec import Encoded, FramingError, Pickle, frame, parse_frame


def test_the_default_is_pickle_protocol_5_with_a_16_kib_threshold():
    default = Pickle()
    assert default.PROTOCOL == pickle.HIGHEST_PROTOCOL == 5
    assert default.THRESHOLD == 16 * 1024
    assert default.loads(default.dumps({"a": (1, 2)})) == {"a": (1, 2)}
    assert isinstance(codec.pickle, Pickle)


def test_protocol_and_threshold_reset_to_their_defaults_with_none():
    p = Pickle(protocol=2, threshold=10)
    assert (p.PROTOCOL, p.THRESHOLD) == (2, 10)
    p.PROTOCOL = None
    p.THRESHOLD = None
    assert (p.PROTOCOL, p.THRESHOLD) == (5, 16 * 1024)
    p.__init__()  # what mpi4py's tests do to restore MPI.pickle
    assert (p.PROTOCOL, p.THRESHOLD) == (5, 16 * 1024)


def test_custom_dumps_without_protocol_is_called_with_the_object_only():
    calls = []

    def dumps(obj):
        calls.append(obj)
        return json.dumps(obj).encode()

    def loads(data):
        return json.loads(bytes(data).decode())

    p = Pickle(dumps, loads)
    assert p.PROTOCOL is None
    stream, buffers = p.encode({"x": [1, 2]})
    assert calls == [{"x": [1, 2]}] and buffers == []
    assert p.decode(memoryview(stream), []) == {"x": [1, 2]}


def test_custom_dumps_with_a_protocol_gets_it():
    p = Pickle(marshal.dumps, marshal.loads, 2)
    stream, buffers = p.encode([1, "two", 3.0])
    assert stream == marshal.dumps([1, "two", 3.0], 2) and buffers == []
    assert p.decode(stream, []) == [1, "two", 3.0]


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(TypeError, match="dumps must be callable"):
        Pickle(dumps=3)
    with pytest.raises(TypeError, match="loads must be callable"):
        Pickle(loads="x")
    with pytest.raises(TypeError, match="protocol must be an int"):
        Pickle(protocol="5")
    with pytest.raises(TypeError, match="threshold must be an int"):
        Pickle(threshold=1.5)


def test_large_contiguous_buffers_leave_the_stream_small_ones_stay():
    big = np.arange(4096, dtype=np.float64)  # 32 KiB
    small = np.arange(10)
    stream, buffers = Pickle().encode({"big": big, "small": small})
    assert len(buffers) == 1 and np.shares_memory(np.asarray(buffers[0]), big)
    out = Pickle().decode(stream, [bytearray(b) for b in buffers])
    assert np.array_equal(out["big"], big) and np.array_equal(out["small"], small)
    stream, buffers = Pickle(threshold=1 << 30).encode({"big": big})
    assert buffers == []  # under the threshold: in-band


def test_below_protocol_5_nothing_goes_out_of_band():
    stream, buffers = Pickle(protocol=4).encode(np.arange(100_000))
    assert buffers == [] and pickle.loads(stream).sum() == np.arange(100_000).sum()


def test_dumps_oob_and_loads_oob_as_in_mpi4py():
    p = Pickle(threshold=0, protocol=4)  # dumps_oob raises the protocol to 5
    array = np.arange(3, dtype=np.uint8)
    data, buffers = p.dumps_oob(array)
    assert [bytes(b) for b in buffers] == [b"\x00\x01\x02"]
    assert np.array_equal(p.loads_oob(data, buffers), array)


def test_a_long_stream_travels_as_the_first_buffer():
    text = "x" * codec.STREAM_OOB_THRESHOLD
    encoded = Encoded.of(Pickle(), text, channel=-7)
    assert encoded.outgoing[0].tobytes() == encoded.stream
    stream, channel, sizes = parse_frame(encoded.view)
    assert stream is None and channel == -7 and sizes == [len(encoded.stream)]


def test_a_message_without_the_framing_is_refused():
    with pytest.raises(FramingError, match="too short"):
        parse_frame(memoryview(b"\x00" * 3))
    with pytest.raises(FramingError, match="does not match its header"):
        parse_frame(memoryview(bytes(frame(b"abc", [], 0)) + b"junk"))


@given(
    stream=st.binary(max_size=200),
    sizes=st.lists(st.integers(min_value=0, max_value=2**40), max_size=5),
    channel=st.integers(min_value=-(2**31), max_value=2**31 - 1),
)
def test_the_framing_round_trips(stream, sizes, channel):
    buffers = [memoryview(bytearray(min(size, 16))) for size in sizes]
    framed = frame(stream, buffers, channel)
    parsed, got_channel, got_sizes = parse_frame(framed)
    assert got_channel == channel
    assert got_sizes == [buffer.nbytes for buffer in buffers]
    if buffers and not stream:
        assert parsed is None  # the stream is the first buffer
    else:
        assert parsed is not None and bytes(parsed) == stream


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text() | st.binary(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
        max_leaves=20,
    )
)
def test_objects_round_trip_through_encode_and_decode(obj):
    p = Pickle(threshold=8)
    stream, buffers = p.encode(obj)
    assert p.decode(stream, [bytearray(b) for b in buffers]) == obj
