"""RDMA get over tcp, between two simulated ranks in one process (the ``pair`` fixture).

Rank 1 registers a region; rank 0 reads parts of it with ``get`` and the completion callback
tells it when the bytes are in place.  The data travels as GET_REPLY frames read straight into
the destination, in order with the other frames of the connection.
"""

from __future__ import annotations

import socket

import numpy as np
import pytest

from ompy.mca.btl.tcp import wire
from ompy.mca.btl.tcp.rdma import split
from ompy.opal.mca.btl import BtlError, BtlPeerError, MemHandle
from ompy.opal.mca.btl.base import TAG_USR
from ompy.opal.readiness import readable

TIMEOUT = 30


def pattern(size: int, seed: int = 0) -> np.ndarray:
    """Bytes that differ at every position (a shifted or misplaced copy shows)."""
    return ((np.arange(size, dtype=np.uint64) * 2654435761 + seed) >> 7).astype(np.uint8)


def connect(pair):
    """Add the peers on every module; rank 0's endpoints to rank 1, one per module."""
    for module in pair.modules[1]:
        module.add_procs(pair.procs)
    return [module.add_procs(pair.procs)[1] for module in pair.modules[0]]


def get(pair, module, endpoint, local, handle, *, offset=0):
    """Issue one get and wait for its completion; the error it completed with (or None)."""
    outcome = []
    module.get(endpoint, local, handle, offset, outcome.append)
    assert pair.engine.wait_until(lambda: outcome, timeout=TIMEOUT), "the get never completed"
    assert len(outcome) == 1, "the completion ran more than once"
    return outcome[0]


SIZES = [0, 1, 7, 4096, 65_536 + 3, 262_144, (1 << 20) + 5, 3 << 20, 64 << 20]


def test_gets_of_every_size_up_to_64_mib_land_intact(pair):
    (zero,), (one,) = pair.modules
    (endpoint,) = connect(pair)
    source = pattern(64 << 20, seed=3)
    handle = one.register_mem(memoryview(source))
    assert handle.length == 64 << 20
    for size in SIZES:
        target = np.zeros(size, dtype=np.uint8)
        assert get(pair, zero, endpoint, memoryview(target), handle, offset=0) is None
        assert np.array_equal(target, source[:size]), f"a {size}-byte get arrived corrupt"
    one.deregister_mem(handle)


def test_gets_at_offsets_read_exactly_the_bytes_asked_for(pair):
    (zero,), (one,) = pair.modules
    (endpoint,) = connect(pair)
    source = pattern(5 << 20, seed=9)
    handle = one.register_mem(memoryview(source))
    for offset, size in [(1, 10), (4095, 70_000), (5 << 20, 0), ((5 << 20) - 3, 3), (777, 4 << 20)]:
        target = np.zeros(size + 8, dtype=np.uint8)  # a guard band behind the destination
        assert (
            get(pair, zero, endpoint, memoryview(target)[4 : 4 + size], handle, offset=offset)
            is None
        )
        assert np.array_equal(target[4 : 4 + size], source[offset : offset + size])
        assert not target[:4].any() and not target[4 + size :].any(), "wrote outside the view"


def test_a_get_outside_the_region_or_into_read_only_memory_is_refused_at_once(pair):
    (zero,), (one,) = pair.modules
    (endpoint,) = connect(pair)
    handle = one.register_mem(memoryview(bytearray(100)))
    with pytest.raises(BtlError, match="does not fit the peer's 100-byte region"):
        zero.get(endpoint, memoryview(bytearray(10)), handle, 95)
    with pytest.raises(BtlError, match="must be writable"):
        zero.get(endpoint, memoryview(b"read only"), handle, 0)


def test_a_get_of_a_key_the_peer_does_not_know_fails_with_the_peers_reason(pair):
    (zero,), (one,) = pair.modules
    (endpoint,) = connect(pair)
    handle = one.register_mem(memoryview(bytearray(100)))
    one.deregister_mem(handle)
    with pytest.raises(BtlError, match="not registered"):
        one.deregister_mem(handle)
    error = get(pair, zero, endpoint, memoryview(bytearray(10)), handle, offset=0)
    assert isinstance(error, BtlPeerError)
    assert f"no region is registered under key {handle.key}" in str(error)
    # The connection survives a refused get.
    live = one.register_mem(memoryview(b"still here"))
    target = bytearray(10)
    assert get(pair, zero, endpoint, memoryview(target), live, offset=0) is None
    assert target == b"still here"


@pytest.mark.parametrize("pair", [{"links": 2, "get_stripe_min": 1 << 20}], indirect=True)
def test_a_long_get_is_striped_over_every_link_and_a_short_one_uses_one(pair):
    zero, one = pair.modules
    endpoints = connect(pair)
    source = pattern(16 << 20, seed=5)
    handle = one[1].register_mem(memoryview(source))  # any link of the owner serves the key
    target = np.zeros(16 << 20, dtype=np.uint8)
    assert get(pair, zero[0], endpoints[0], memoryview(target), handle, offset=0) is None
    assert np.array_equal(target, source)
    shares = [module.bytes_received for module in zero]
    assert all(share >= 7 << 20 for share in shares), shares  # equal bandwidth: halves
    before = list(shares)
    small = np.zeros((1 << 20) + 100, dtype=np.uint8)  # shorter than two shares
    assert get(pair, zero[1], endpoints[1], memoryview(small), handle, offset=100) is None
    assert np.array_equal(small, source[100 : 100 + len(small)])
    grown = [
        after - was for after, was in zip([m.bytes_received for m in zero], before, strict=True)
    ]
    assert grown[0] == 0 and grown[1] > len(small), grown


def test_many_concurrent_gets_and_frames_keep_their_order_and_content(pair):
    (zero,), (one,) = pair.modules
    (endpoint,) = connect(pair)
    (back,) = [one.add_procs(pair.procs)[0]]
    source = pattern(8 << 20, seed=11)
    handle = one.register_mem(memoryview(source))
    rng = np.random.default_rng(7)
    done: list[int] = []
    targets = []
    for number in range(200):
        size = int(rng.choice([0, 1, 100, 70_000, 300_000, 2 << 20]))
        offset = int(rng.integers(0, (8 << 20) - size + 1))
        target = np.zeros(size, dtype=np.uint8)
        targets.append((target, offset))
        zero.get(endpoint, memoryview(target), handle, offset, lambda e, n=number: done.append(n))
        if number % 20 == 0:  # rank 1 sends frames while answering: they stay in order
            payload = memoryview(b"%d" % number)
            if not one.sendi(back, b"", payload, TAG_USR):
                one.send(back, one.prepare_src(back, payload, 0), TAG_USR)
    assert pair.engine.wait_until(lambda: len(done) == 200, timeout=TIMEOUT)
    assert sorted(done) == list(range(200))
    for target, offset in targets:
        assert np.array_equal(target, source[offset : offset + len(target)])
    assert [data for _name, data in pair.inboxes[0]] == [b"%d" % n for n in range(0, 200, 20)]
    assert not endpoint.gets, "finished gets are forgotten"


def test_a_get_from_a_peer_that_goes_away_fails_instead_of_hanging(pair):
    (zero,), (one,) = pair.modules
    (endpoint,) = connect(pair)
    errors = []
    zero.register_error(lambda module, peer, error: errors.append(error))
    handle = one.register_mem(memoryview(pattern(32 << 20)))
    warm = bytearray(1)
    assert get(pair, zero, endpoint, memoryview(warm), handle, offset=0) is None  # connected
    outcome = []
    zero.get(endpoint, memoryview(bytearray(32 << 20)), handle, 0, outcome.append)
    one.finalize()  # without answering: its side closes under the get
    assert pair.engine.wait_until(lambda: outcome, timeout=TIMEOUT)
    assert isinstance(outcome[0], BtlPeerError), outcome
    assert "rank 1" in str(outcome[0])
    with pytest.raises(BtlPeerError):
        zero.get(endpoint, memoryview(bytearray(1)), handle, 0)
    pair.modules[1] = []  # already finalized


def test_finalize_fails_gets_still_in_flight(pair):
    (zero,), _ = pair.modules
    (endpoint,) = connect(pair)
    outcome = []
    zero.get(endpoint, memoryview(bytearray(10)), MemHandle(1, 10), 0, outcome.append)
    with pytest.raises(BtlPeerError, match="could not deliver 1 frame"):
        zero.finalize()  # the GET itself never left: the handshake had no time
    assert len(outcome) == 1 and isinstance(outcome[0], BtlPeerError)
    pair.modules[0] = []


def test_split_covers_the_length_in_weighted_shares_of_at_least_the_minimum():
    assert split(10, [1, 1], 100) == [(0, 10)]
    assert split(1000, [1, 1], 100) == [(0, 500), (500, 500)]
    assert split(1000, [3, 1], 100) == [(0, 750), (750, 250)]
    assert split(250, [1, 1, 1], 100) == [(0, 125), (125, 125)]
    assert split(7, [0, 0], 1) == [(0, 3), (3, 4)]


def receive(pair, sock: socket.socket, size: int) -> bytes:
    """Read ``size`` bytes from a raw socket while the pair's modules progress (one thread)."""
    data = b""
    while len(data) < size:
        ready = pair.engine.wait_until(lambda: readable([sock], 0), timeout=10)
        assert ready, f"the module sent only {len(data)} of {size} bytes"
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


BAD_FRAMES = {
    "unknown kind": (wire.FRAME.pack(0, 99, 0), "unknown kind 99"),
    "short GET": (wire.FRAME.pack(4, wire.KIND_GET, 0) + bytes(4), "with only 4 bytes"),
    "GET before add_procs": (
        wire.FRAME.pack(wire.GET_REQUEST.size, wire.KIND_GET, 0)
        + wire.GET_REQUEST.pack(1, 1, 0, 1),
        "before this process added it as a peer",
    ),
    "reply to no get": (
        wire.FRAME.pack(wire.GET_REPLY.size + 3, wire.KIND_GET_REPLY, 0)
        + wire.GET_REPLY.pack(42, 0)
        + b"abc",
        "for get 42, which is not in flight",
    ),
}


@pytest.mark.parametrize("bad", list(BAD_FRAMES), ids=list(BAD_FRAMES))
def test_a_malformed_get_frame_closes_the_connection_with_a_protocol_error(pair, bad):
    (zero,), _ = pair.modules
    errors = []
    zero.register_error(lambda module, peer, error: errors.append(error))
    frame, reason = BAD_FRAMES[bad]
    with socket.create_connection(("127.0.0.1", zero.port), timeout=10) as sock:
        hello = wire.HELLO.pack(wire.MAGIC, bytes(16), 1, 0)
        sock.sendall(hello)
        challenge = receive(pair, sock, wire.CHALLENGE_SIZE)
        sock.sendall(wire.mac(pair.secret, b"connector", hello, challenge))
        assert receive(pair, sock, wire.VERDICT.size) == wire.VERDICT.pack(wire.VERDICT_ACCEPT)
        assert zero.unclaimed, "a verified connection waits for add_procs to name its peer"
        sock.sendall(frame)
        assert pair.engine.wait_until(lambda: errors, timeout=TIMEOUT)
        assert isinstance(errors[0], BtlPeerError) and reason in str(errors[0]), errors
        assert receive(pair, sock, 16) == b"", "the module must close the connection"
    assert not zero.unclaimed and not zero.connections
