"""btl/sm's PeerRing: one peer's ring polled in place by the receiver (the PML's fast path).

What a poller takes and what it leaves for progress must together be every record, in the
order sent, across wrap-arounds and full rings; a sender waiting for room is woken by a
release; the locked protocol offers no ring; a finalized module's ring reads as empty.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.opal.mca.btl.base import TAG_USR
from ompy.opal.mca.shmem import base as shmem_base

from .conftest import Ranks, leftovers
from .test_sm_rings import TINY, payload, send


def ring_of(ranks, receiver: int, sender: int):
    module = ranks.modules[receiver]
    return module.peer_ring(ranks.endpoints[receiver][sender])


@settings(max_examples=30, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.integers(4, 250),  # payload size (records wrap in a 1 KiB ring)
            st.sampled_from(["take", "leave", "progress", "none"]),
        ),
        min_size=1,
        max_size=120,
    )
)
def test_taken_and_delivered_records_together_are_every_record_in_order(steps):
    ranks = Ranks(2, dict(TINY))
    try:
        check_every_record_in_order(ranks, steps)
    finally:
        ranks.close()
        shmem_base.reset_selection()
    assert leftovers(ranks.jobid) == []


def check_every_record_in_order(ranks: Ranks, steps: list[tuple[int, str]]) -> None:
    ring = ring_of(ranks, 1, 0)
    assert ring is not None and ring is ring_of(ranks, 1, 0), "one ring per peer, kept"
    received: list[bytes] = []  # in the order the receiver saw them, by either way
    delivered = ranks.inboxes[1]
    sent = []

    def collect() -> None:
        received.extend(delivered)
        delivered.clear()

    for seq, (size, action) in enumerate(steps):
        data = payload(seq, size)
        sent.append(data)
        send(ranks, 0, 1, data)  # queued by the sender when the ring is full
        ranks.modules[0].progress()  # the sender retries its queue
        if action == "take":
            record = ring.poll()
            if record is not None:
                tag, view = record
                assert tag == TAG_USR
                received.append(bytes(view))
                ring.release()
        elif action == "leave":
            record = ring.poll()
            if record is not None:  # looked at, not taken: progress must deliver it
                ranks.modules[1].progress()
                collect()
        elif action == "progress":
            ranks.modules[1].progress()
            collect()
    for _ in range(len(steps) + 2):  # the rest: queued sends flushed as room appears
        ranks.modules[0].progress()
        ranks.modules[1].progress()
        collect()
    assert received == sent


def test_a_release_wakes_a_sender_that_waits_for_room(make_ranks):
    ranks = make_ranks(2, **TINY)
    sender = ranks.modules[0]
    ring = ring_of(ranks, 1, 0)
    results = [send(ranks, 0, 1, payload(seq, 200)) for seq in range(8)]
    assert not all(results), "a 1 KiB ring holds fewer than eight 200-byte records"
    assert sender.before_sleep(), "nothing to do: the sender may sleep, waiting for room"
    sender.doorbell.drain()
    assert ring.poll() is not None
    ring.release()
    assert sender.doorbell.drain(), "the release did not ring the waiting sender's doorbell"


def test_the_locked_protocol_offers_no_ring(make_ranks):
    locked = make_ranks(2, btl_sm_lockfree="no", **TINY)
    assert ring_of(locked, 1, 0) is None


def test_a_finalized_modules_ring_reads_empty(make_ranks):
    ranks = make_ranks(2, **TINY)
    ring = ring_of(ranks, 1, 0)
    send(ranks, 0, 1, payload(1, 16))
    ranks.modules[1].finalize()
    assert ring.poll() is None


def test_a_receiver_inside_its_own_progress_does_not_read_the_ring(make_ranks):
    ranks = make_ranks(2, **TINY)
    receiver = ranks.modules[1]
    ring = ring_of(ranks, 1, 0)
    polled = []
    receiver.register(TAG_USR + 1, lambda _m, _t, _view: polled.append(ring.poll()))
    for seq in (1, 2):
        ranks.modules[0].sendi(
            ranks.endpoints[0][1], b"", memoryview(payload(seq, 16)), TAG_USR + 1
        )
    receiver.progress()
    assert polled == [None, None], "a callback polled the ring the pass is reading"


@pytest.mark.parametrize("size", [4, 250])
def test_a_polled_record_is_the_payload_sent(make_ranks, size):
    ranks = make_ranks(2, **TINY)
    ring = ring_of(ranks, 1, 0)
    assert ring.poll() is None
    send(ranks, 0, 1, payload(3, size))
    tag, view = ring.poll()
    assert (tag, bytes(view)) == (TAG_USR, payload(3, size))
    ring.release()
    assert ring.poll() is None


HEADER = struct.Struct("!BBHIii")


@settings(max_examples=40, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(4, 250), st.sampled_from(["take", "progress", "none"])),
        min_size=1,
        max_size=120,
    )
)
def test_poll_header_reads_what_poll_reads_with_the_header_unpacked(steps):
    ranks = Ranks(2, dict(TINY))
    try:
        ring = ring_of(ranks, 1, 0)
        received: list[bytes] = []
        delivered = ranks.inboxes[1]
        sent = []
        for seq, (size, action) in enumerate(steps):
            data = payload(seq, size)
            sent.append(data)
            send(ranks, 0, 1, data)
            ranks.modules[0].progress()
            if action == "take":
                record = ring.poll_header(HEADER)
                if record is not None:
                    fields, body = record
                    tag, view = ring.poll()  # the same record, read the plain way
                    whole = bytes(view)
                    assert fields[:2] == (len(whole), tag) == (len(whole), TAG_USR)
                    assert len(fields) == 2 + 6
                    if len(whole) >= HEADER.size:
                        assert fields[2:] == HEADER.unpack_from(whole)
                        assert bytes(body) == whole[HEADER.size :]
                    received.append(whole)
                    ring.release()
            elif action == "progress":
                ranks.modules[1].progress()
                received.extend(delivered)
                delivered.clear()
        for _ in range(len(steps) + 2):
            ranks.modules[0].progress()
            ranks.modules[1].progress()
        received.extend(delivered)
        assert received == sent
    finally:
        ranks.close()
        shmem_base.reset_selection()
    assert leftovers(ranks.jobid) == []


def test_poll_header_refuses_a_header_in_another_byte_order(make_ranks):
    ranks = make_ranks(2, **TINY)
    ring = ring_of(ranks, 1, 0)
    send(ranks, 0, 1, payload(1, 32))
    with pytest.raises(ValueError, match="network byte order"):
        ring.poll_header(struct.Struct("<BBHIii"))
