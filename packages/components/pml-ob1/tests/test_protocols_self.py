"""ob1's protocols end to end inside one process, over btl/self.

Small BTL limits force every protocol with small messages: with ``btl_self_eager_limit=256``
a message of up to 240 bytes (256 minus the 16-byte MATCH header) goes eagerly, a longer one
by rendezvous: RNDV carries the first 224 bytes (256 minus the 32-byte RNDV header), then either
FRAG fragments of up to ``max_send_size - 32`` bytes follow the ACK, or (btl/self offers get)
the receiver reads the whole message after an RGET.
"""

from __future__ import annotations

import numpy as np
import pytest
from ob1_harness import FakeComm, Spy, pattern

from ompy.ompi.constants import ANY_SOURCE, ANY_TAG
from ompy.ompi.errors import ERR_TRUNCATE
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.pml import SendMode

SMALL = {"btl_self_eager_limit": 256, "btl_self_max_send_size": 1024}
FRAGS = {**SMALL, "pml_ob1_use_rdma": "false"}
RGET = {**SMALL, "pml_ob1_use_rdma": "true"}

SIZES = [0, 1, 239, 240, 241, 224, 225, 1023, 1024, 1025, 5000, 1 << 20]


def expected_headers(size: int, params: dict) -> dict[str, int]:
    """The fragments a message of ``size`` bytes takes under ``params`` (see the docstring)."""
    if size + 16 <= 256:
        return {"MATCH": 1}
    if params.get("pml_ob1_use_rdma") == "true":
        return {"RGET": 1, "FIN": 1}
    rest = size - 224
    frags = -(-rest // (1024 - 32))
    return {"RNDV": 1, "ACK": 1, "FRAG": frags}


@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
@pytest.mark.parametrize("size", SIZES)
def test_each_size_arrives_intact_by_the_protocol_its_size_calls_for(make_world, params, size):
    world = make_world(1, **params)
    spy = Spy(world, 0)
    data = pattern(size, seed=size)
    out = np.zeros(size, np.uint8)
    receive = world.irecv(0, out, 0, 5)
    send = world.isend(0, data, 0, 5)
    world.wait(send, receive)
    assert (receive.source, receive.tag, receive.count, receive.error) == (0, 5, size, 0)
    assert np.array_equal(out, data)
    assert dict(spy.counts) == expected_headers(size, params)


@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
def test_a_message_sent_before_its_receive_is_posted_waits_as_unexpected(make_world, params):
    world = make_world(1, **params)
    messages = [pattern(size, seed) for seed, size in enumerate([3, 240, 241, 3000])]
    sends = [world.isend(0, data, 0, 9) for data in messages]
    assert all(send.complete for send in sends), "a send to oneself completes locally"
    outs = [np.zeros(len(data), np.uint8) for data in messages]
    receives = [world.irecv(0, out, 0, 9) for out in outs]
    world.wait(*sends, *receives)
    for out, data in zip(outs, messages, strict=True):
        assert np.array_equal(out, data)


def test_the_default_limits_send_128_kib_messages_eagerly(make_world):
    world = make_world(1)
    spy = Spy(world, 0)
    data = pattern(128 * 1024 - 16)
    out = np.zeros_like(data)
    world.wait(world.isend(0, data, 0, 1), world.irecv(0, out, 0, 1))
    assert spy.counts == {"MATCH": 1} and np.array_equal(out, data)


@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
@pytest.mark.parametrize(("size", "room"), [(100, 10), (241, 100), (241, 230), (5000, 3000)])
def test_truncation_delivers_what_fits_and_reports_both_sizes(make_world, params, size, room):
    world = make_world(1, **params)
    data = pattern(size)
    out = np.zeros(room + 8, np.uint8)
    receive = world.irecv(0, out[:room], 0, 2)
    send = world.isend(0, data, 0, 2)
    world.wait(send, receive)
    assert receive.error == ERR_TRUNCATE
    assert isinstance(receive.exception, MPIException) and receive.exception == ERR_TRUNCATE
    assert f"{size} bytes" in str(receive.exception) and f"{room} bytes" in str(receive.exception)
    assert receive.count == room
    assert np.array_equal(out[:room], data[:room]) and not out[room:].any()
    # nothing of the message is left behind: the next one matches normally
    follow = np.zeros(4, np.uint8)
    world.wait(world.isend(0, pattern(4, 7), 0, 2), world.irecv(0, follow, 0, 2))
    assert np.array_equal(follow, pattern(4, 7))


@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
def test_mixed_sizes_match_in_the_order_they_were_sent(make_world, params):
    world = make_world(1, **params)
    sizes = [5, 3000, 0, 241, 17, 1 << 16, 240, 1, 2048]
    messages = [pattern(size, seed) for seed, size in enumerate(sizes)]
    sends = [world.isend(0, data, 0, 4) for data in messages]
    outs = [np.zeros(max(sizes), np.uint8) for _ in sizes]
    receives = [world.irecv(0, out, ANY_SOURCE, ANY_TAG) for out in outs]
    world.wait(*sends, *receives)
    for receive, out, data in zip(receives, outs, messages, strict=True):
        assert receive.count == len(data)
        assert np.array_equal(out[: len(data)], data)


def test_any_tag_takes_only_non_negative_tags(make_world):
    world = make_world(1)
    internal = world.isend(0, pattern(3, 1), 0, -7)
    user = world.isend(0, pattern(3, 2), 0, 11)
    out = np.zeros(3, np.uint8)
    receive = world.irecv(0, out, ANY_SOURCE, ANY_TAG)
    world.wait(internal, user, receive)
    assert receive.tag == 11 and np.array_equal(out, pattern(3, 2))
    negative = np.zeros(3, np.uint8)
    world.wait(world.irecv(0, negative, 0, -7))
    assert np.array_equal(negative, pattern(3, 1))


def test_communicators_do_not_see_each_others_messages(make_world):
    world = make_world(1)
    other = world.comm(7)
    world.isend(0, pattern(2, 1), 0, 3, comm=other)
    out = np.zeros(2, np.uint8)
    receive = world.irecv(0, out, 0, 3)
    world.settle()
    assert not receive.complete
    world.wait(world.isend(0, pattern(2, 2), 0, 3), receive)
    assert np.array_equal(out, pattern(2, 2))
    elsewhere = np.zeros(2, np.uint8)
    world.wait(world.irecv(0, elsewhere, 0, 3, comm=other))
    assert np.array_equal(elsewhere, pattern(2, 1))


@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
@pytest.mark.parametrize("size", [0, 10, 5000])
def test_a_synchronous_send_completes_only_once_the_receive_matched(make_world, params, size):
    world = make_world(1, **params)
    data = pattern(size)
    send = world.isend(0, data, 0, 1, mode=SendMode.SYNCHRONOUS)
    world.settle()
    assert not send.complete
    out = np.zeros(size, np.uint8)
    receive = world.irecv(0, out, 0, 1)
    world.wait(send, receive)
    assert np.array_equal(out, data)


@pytest.mark.parametrize("mode", [SendMode.READY, SendMode.BUFFERED])
def test_ready_and_buffered_sends_behave_like_standard_ones(make_world, mode):
    world = make_world(1, **SMALL)
    out = np.zeros(10, np.uint8)
    receive = world.irecv(0, out, 0, 1)
    world.wait(world.isend(0, pattern(10), 0, 1, mode=mode), receive)
    assert np.array_equal(out, pattern(10))


@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
def test_probe_reports_without_consuming_and_mprobe_takes_the_message(make_world, params):
    world = make_world(1, **params)
    comm = world.world[0]
    pml = world.pmls[0]
    assert pml.iprobe(0, 3, comm) is None
    world.isend(0, pattern(5000, 1), 0, 3)
    world.isend(0, pattern(7, 2), 0, 4)
    status = pml.iprobe(ANY_SOURCE, ANY_TAG, comm)
    assert (status.source, status.tag, status.count) == (0, 3, 5000)
    assert pml.iprobe(0, 3, comm) == status, "a probe never consumes"
    message = pml.improbe(0, 4, comm)
    assert (message.source, message.tag, message.count) == (0, 4, 7)
    assert pml.iprobe(0, 4, comm) is None, "an mprobed message is out of matching"
    from ompy.ompi.datatype.buffer import parse_buffer

    out = np.zeros(7, np.uint8)
    receive = pml.imrecv(parse_buffer(out, readonly=False), message)
    world.wait(receive)
    assert np.array_equal(out, pattern(7, 2)) and receive.tag == 4
    with pytest.raises(MPIException, match="already received"):
        pml.imrecv(parse_buffer(out, readonly=False), message)
    big = np.zeros(5000, np.uint8)
    world.wait(world.irecv(0, big, 0, 3))
    assert np.array_equal(big, pattern(5000, 1))


def test_cancel_removes_a_posted_receive_but_not_a_matched_one(make_world):
    world = make_world(1, **FRAGS)
    first = world.irecv(0, np.zeros(4, np.uint8), 0, 1)
    first.cancel()
    assert first.complete and first.cancelled
    out = np.zeros(4, np.uint8)
    second = world.irecv(0, out, 0, 1)
    world.wait(world.isend(0, pattern(4), 0, 1), second)
    assert np.array_equal(out, pattern(4)), "the cancelled receive took nothing"
    matched = world.irecv(0, np.zeros(2000, np.uint8), 0, 2)
    send = world.isend(0, pattern(2000), 0, 2)
    matched.cancel()
    world.wait(send, matched)
    assert not matched.cancelled and matched.count == 2000


def test_a_send_from_a_completion_callback_to_oneself_is_matched_after_the_outer_match(
    make_world,
):
    world = make_world(1)
    out = np.zeros(3, np.uint8)
    inner = world.irecv(0, out, 0, 2)
    outer = world.irecv(0, np.zeros(3, np.uint8), 0, 1)
    sent = []
    outer.on_complete = lambda request: sent.append(world.isend(0, pattern(3, 9), 0, 2))
    world.wait(world.isend(0, pattern(3), 0, 1), outer)
    world.wait(inner, *sent)
    assert np.array_equal(out, pattern(3, 9))


def test_bad_ranks_and_unknown_communicators_are_clear_errors(make_world):
    world = make_world(1)
    pml = world.pmls[0]
    with pytest.raises(MPIException, match=r"destination 1 is not in 0\.\.0"):
        world.isend(0, pattern(1), 1, 0)
    with pytest.raises(MPIException, match="source 3 is not ANY_SOURCE"):
        world.irecv(0, np.zeros(1, np.uint8), 3, 0)
    stranger = FakeComm(44, 0, [0])
    with pytest.raises(MPIException, match="communicator 44 was not added"):
        pml.iprobe(0, 0, stranger)
    with pytest.raises(Exception, match="context id 0 is already used"):
        world.comm(0)


@pytest.mark.parametrize("params", [FRAGS, RGET, {}], ids=["frags", "rget", "defaults"])
def test_a_long_send_to_oneself_completes_before_the_receive_and_delivers_what_was_sent(
    make_world, params
):
    """A blocking send to oneself must not wait for a receive only the caller can post later."""
    world = make_world(1, **params)
    data = pattern(1 << 20, seed=7)
    sent = data.copy()
    send = world.isend(0, data, 0, 3)
    assert send.complete and send.count == data.nbytes
    data[:] = 0  # the caller may reuse its buffer at once
    out = np.zeros_like(sent)
    receive = world.irecv(0, out, 0, 3)
    world.wait(receive)
    assert np.array_equal(out, sent)
    assert world.pmls[0].idle


def test_a_synchronous_send_to_oneself_still_waits_for_the_match(make_world):
    world = make_world(1, **RGET)
    data = pattern(5000)
    send = world.isend(0, data, 0, 4, mode=SendMode.SYNCHRONOUS)
    assert not send.complete
    out = np.zeros_like(data)
    world.wait(send, world.irecv(0, out, 0, 4))
    assert np.array_equal(out, data)


@pytest.mark.parametrize(
    ("size", "headers"),
    [(4999, {"RNDV": 1, "ACK": 1, "FRAG": 5}), (5000, {"RGET": 1, "FIN": 1})],
)
def test_rget_starts_at_the_modules_min_rdma_pipeline_size(make_world, size, headers):
    """Below the threshold a get costs more than it saves: the message goes by fragments."""
    world = make_world(1, **RGET, btl_self_min_rdma_pipeline_size=5000)
    spy = Spy(world, 0)
    data, out = pattern(size), np.zeros(size, np.uint8)
    world.wait(world.irecv(0, out, 0, 1), world.isend(0, data, 0, 1))
    assert np.array_equal(out, data)
    assert dict(spy.counts) == headers


def test_a_send_that_fails_for_a_lost_peer_releases_its_registration(make_world):
    world = make_world(1, **RGET)
    pml = world.pmls[0]
    (module,) = world.btl_modules(0)
    send = world.isend(0, pattern(5000), 0, 2, mode=SendMode.SYNCHRONOUS)
    assert len(module._regions) == 1, "an RGET send holds its buffer registered"
    pml._btl_error(module, pml._peers[0].send[0].endpoint, ConnectionResetError("gone"))
    assert send.complete and send.error
    assert module._regions == {}
