"""Control frames: length + msgpack map, never pickle, size limits, and the HMAC handshake."""

from __future__ import annotations

import pickle
import socket
import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.orte.control import auth, protocol, wire
from ompy.orte.control.errors import FenceError, ModexKeyError, RequestError

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.binary(max_size=40)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
messages = st.dictionaries(st.text(max_size=10), values, max_size=6)


@settings(deadline=None)
@given(messages)
def test_a_message_survives_encoding_and_decoding(message):
    frame = wire.encode(message)
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    assert wire.decode_body(frame[4:]) == message


@settings(deadline=None)
@given(st.lists(messages, min_size=1, max_size=5), st.integers(min_value=1, max_value=7))
def test_the_decoder_reassembles_frames_split_anywhere(batch, chunk):
    stream = b"".join(wire.encode(message) for message in batch)
    decoder = wire.FrameDecoder()
    received = []
    for start in range(0, len(stream), chunk):
        received.extend(decoder.feed(stream[start : start + chunk]))
    assert received == batch
    assert decoder.pending == 0


def test_a_frame_above_the_limit_is_refused_before_its_body_arrives():
    decoder = wire.FrameDecoder(limit=100)
    with pytest.raises(wire.ProtocolError, match="101 bytes exceeds the limit of 100"):
        decoder.feed(struct.pack(">I", 101))


def test_a_frame_that_is_not_a_map_is_refused():
    body = msgpack.packb([1, 2, 3])
    with pytest.raises(wire.ProtocolError, match="must hold a map, got list"):
        wire.FrameDecoder().feed(struct.pack(">I", len(body)) + body)


def test_a_pickle_is_not_a_control_frame():
    body = pickle.dumps({"op": "hello"})
    with pytest.raises(wire.ProtocolError):
        wire.FrameDecoder().feed(struct.pack(">I", len(body)) + body)


def test_values_msgpack_cannot_carry_are_refused_when_encoding():
    with pytest.raises(TypeError):
        wire.encode({"op": "commit", "data": {"x": object()}})
    with pytest.raises(TypeError, match="is a dict, got list"):
        wire.encode([1])


def test_blocking_receive_reads_whole_messages_and_reports_a_close():
    left, right = socket.socketpair()
    with left, right:
        left.sendall(wire.encode({"op": "a"}) + wire.encode({"op": "b", "x": b"\0" * 70000}))
        assert wire.recv_message(right) == {"op": "a"}
        assert wire.recv_message(right)["x"] == b"\0" * 70000
        left.sendall(wire.encode({"op": "c"})[:6])
        left.close()
        with pytest.raises(wire.ConnectionClosedError, match="inside a frame"):
            wire.recv_message(right)


def test_a_proof_binds_the_secret_the_nonce_and_the_claimed_rank():
    secret, nonce = b"s" * 32, auth.new_nonce()
    answer = auth.proof(secret, nonce, auth.ROLE_RANK, 3)
    assert auth.verify(secret, nonce, auth.ROLE_RANK, 3, answer)
    assert not auth.verify(b"t" * 32, nonce, auth.ROLE_RANK, 3, answer)
    assert not auth.verify(secret, auth.new_nonce(), auth.ROLE_RANK, 3, answer)
    assert not auth.verify(secret, nonce, auth.ROLE_RANK, 4, answer)


@pytest.mark.parametrize(
    ("message", "complaint"),
    [
        ({"op": "launch_missiles", "id": 1}, "unknown control request 'launch_missiles'"),
        ({"id": 1}, "unknown control request None"),
        ({"op": "get", "id": 1, "rank": 0}, "lacks the field 'key'"),
        ({"op": "get", "id": 1, "rank": True, "key": "k"}, "bad 'rank'"),
        ({"op": "commit", "id": 1, "data": [1]}, "bad 'data'"),
    ],
)
def test_malformed_requests_are_named(message, complaint):
    with pytest.raises(RequestError, match=complaint):
        protocol.check_client_message(message)


def test_refusals_travel_back_as_the_same_kind_of_error():
    missing = protocol.error_from_payload(protocol.error_payload(ModexKeyError(2, "addr")))
    assert isinstance(missing, ModexKeyError) and isinstance(missing, KeyError)
    assert (missing.rank, missing.key) == (2, "addr")
    assert "rank 2 has not committed the modex key 'addr'" in str(missing)
    fence = protocol.error_from_payload(protocol.error_payload(FenceError("rank 1 was lost")))
    assert isinstance(fence, FenceError) and "rank 1 was lost" in str(fence)
    assert isinstance(protocol.error_from_payload("junk"), RequestError)
