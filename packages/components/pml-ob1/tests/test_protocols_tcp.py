"""ob1 between simulated ranks in one process over real loopback TCP connections (and self).

With ``btl_tcp_links=2`` each pair of ranks has two connections: short messages and headers
alternate between them (so they can overtake each other and matching must restore the order),
and long messages are striped over both in proportion to their bandwidth.
"""

from __future__ import annotations

import numpy as np
import pytest
from ob1_harness import FakeComm, pattern

from ompy.mca.pml.ob1.headers import MATCH, RNDV
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG
from ompy.ompi.datatype.buffer import parse_buffer
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.pml import SendMode

pytestmark = pytest.mark.timeout(120)
TWO_LINKS = {"btl_tcp_links": 2}


def test_each_peer_is_reached_by_its_most_exclusive_transport(make_world):
    world = make_world(2, "self,tcp", **TWO_LINKS)
    peers = world.pmls[0]._peers
    assert [m.name for m in peers[0].modules] == ["self"]
    assert [m.name for m in peers[1].modules] == ["tcp:lo:0", "tcp:lo:1"]


def test_a_long_message_is_striped_over_both_links_by_bandwidth(make_world):
    # Fragments, not RDMA: tcp offers get, and a get would carry the message instead.
    world = make_world(2, "self,tcp", **TWO_LINKS, pml_ob1_use_rdma=0)
    size = 4 << 20
    data = pattern(size, 3)
    out = np.zeros(size, np.uint8)
    world.wait(world.isend(0, data, 1, 0), world.irecv(1, out, 0, 0))
    assert np.array_equal(out, data)
    stripes = world.pmls[0]._peers[1].send
    carried = [btl.bytes_scheduled for btl in stripes]
    assert all(carried), f"a link carried nothing: {carried}"
    first = stripes[0].eager_limit - RNDV.size  # what the RNDV fragment carried
    assert sum(carried) == size - first, "everything after the RNDV fragment"
    assert abs(carried[0] - carried[1]) <= 128 * 1024, f"equal bandwidth, unequal shares {carried}"


def test_mixed_sizes_keep_their_order_across_two_connections(make_world):
    world = make_world(2, "self,tcp", **TWO_LINKS)
    # Around the eager limit: the longest eager message, the shortest rendezvous one.
    eager = world.pmls[0]._peers[1].send[0].eager_limit - MATCH.size
    sizes = [1, 170_000, 5, 0, 300_000, eager, eager + 1, 9] * 3
    messages = [pattern(size, seed) for seed, size in enumerate(sizes)]
    sends = [world.isend(0, data, 1, seed % 3) for seed, data in enumerate(messages)]
    outs = [np.zeros(max(sizes), np.uint8) for _ in sizes]
    receives = [world.irecv(1, out, 0, ANY_TAG) for out in outs]
    world.wait(*sends, *receives)
    for seed, (receive, out, data) in enumerate(zip(receives, outs, messages, strict=True)):
        assert (receive.count, receive.tag) == (len(data), seed % 3)
        assert np.array_equal(out[: len(data)], data), f"message {seed} corrupted"


def test_any_source_receives_from_every_sender(make_world):
    world = make_world(3, "self,tcp")
    sends = [world.isend(rank, pattern(100_000, rank), 0, 7) for rank in (0, 1, 2)] + [
        world.isend(rank, pattern(10, rank), 0, 8) for rank in (1, 2)
    ]
    outs = [np.zeros(100_000, np.uint8) for _ in range(5)]
    receives = [world.irecv(0, out, ANY_SOURCE, ANY_TAG) for out in outs]
    world.wait(*sends, *receives)
    got = sorted((r.source, r.tag, r.count) for r in receives)
    assert got == [(0, 7, 100_000), (1, 7, 100_000), (1, 8, 10), (2, 7, 100_000), (2, 8, 10)]
    for receive, out in zip(receives, outs, strict=True):
        assert np.array_equal(out[: receive.count], pattern(receive.count, receive.source))


@pytest.mark.parametrize("size", [10, 1 << 20])
def test_a_synchronous_send_waits_for_the_remote_match(make_world, size):
    world = make_world(2, "self,tcp")
    send = world.isend(0, pattern(size), 1, 1, mode=SendMode.SYNCHRONOUS)
    world.settle(0.2)
    assert not send.complete
    out = np.zeros(size, np.uint8)
    world.wait(send, world.irecv(1, out, 0, 1))
    assert np.array_equal(out, pattern(size))


def test_a_message_for_a_communicator_the_receiver_has_not_added_yet_waits(make_world):
    world = make_world(2, "self,tcp")
    early = FakeComm(5, 0, [0, 1])
    world.pmls[0].add_comm(early)
    sends = [
        world.pmls[0].isend(_spec(pattern(n, n)), 1, 1, early, SendMode.STANDARD)
        for n in (3, 200_000)
    ]
    world.settle(0.2)  # both arrive at rank 1, which has no communicator 5 yet
    late = FakeComm(5, 1, [0, 1])
    world.pmls[1].add_comm(late)
    outs = [np.zeros(n, np.uint8) for n in (3, 200_000)]
    receives = [world.pmls[1].irecv(_spec(out, False), 0, 1, late) for out in outs]
    world.wait(*sends, *receives)
    for out in outs:
        assert np.array_equal(out, pattern(len(out), len(out)))


def test_a_message_for_a_communicator_never_created_is_reported_at_finalize(make_world):
    world = make_world(2, "self,tcp")
    lonely = FakeComm(12, 0, [0, 1])
    world.pmls[0].add_comm(lonely)
    world.wait(world.pmls[0].isend(_spec(pattern(4)), 1, 0, lonely, SendMode.STANDARD))
    world.settle(0.2)
    with pytest.raises(MPIException, match=r"never created \(1 for context 12\)"):
        world.finalize()


def _spec(array, readonly=True):
    return parse_buffer(array, readonly=readonly)
