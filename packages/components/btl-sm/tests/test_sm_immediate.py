"""btl/sm's immediate send: the PML's header packed with the record header into the ring.

What it writes must be exactly what ``sendi`` with the packed header writes (record for record,
in order, with wrap-arounds, full rings and queued sends in between, in both ring protocols);
it declines what ``sendi`` declines, and a released peer raises instead of touching memory
that is no longer mapped.  The locked protocol, and a header in another byte order, have none
(the PML then packs the header and calls ``sendi``).
"""

from __future__ import annotations

import select
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.opal.mca.btl import BtlPeerError
from ompy.opal.mca.btl.base import TAG_USR
from ompy.opal.mca.shmem import base as shmem_base

from .conftest import Ranks, leftovers
from .test_sm_rings import TINY, payload

#: A header like ob1's MATCH (network order: packed together with the record header).
HEADER = struct.Struct("!BBHIii")
#: One in little-endian order: it cannot share a struct with the record header.
LITTLE = struct.Struct("<BBHIii")


def fields_of(seq: int) -> tuple[int, ...]:
    return (0x41, seq % 3, seq % 65536, 7 + seq, seq % 5, -seq if seq % 4 == 0 else seq)


def send_like_the_pml(ranks, immediate, header, seq: int, data: bytes) -> bool:
    """The immediate send (or, without one, sendi of the packed header), else the packed
    header and payload through a descriptor."""
    fields = fields_of(seq)
    module, endpoint = ranks.modules[0], ranks.endpoints[0][1]
    if immediate is None:
        if len(data) + header.size <= module.eager_limit and module.sendi(
            endpoint, header.pack(*fields), memoryview(data), TAG_USR
        ):
            return True
    elif immediate(memoryview(data), *fields):
        return True
    record = header.pack(*fields) + data
    descriptor = module.prepare_src(endpoint, memoryview(record), 0)
    assert descriptor.data_length == len(record)
    return module.send(endpoint, descriptor, TAG_USR)


@settings(max_examples=25, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 220), st.sampled_from(["progress", "sender", "none"])),
        min_size=1,
        max_size=150,
    ),
    protocol=st.sampled_from(["auto", "no"]),
    little=st.booleans(),
)
def test_immediate_records_are_the_packed_header_and_payload_in_order(steps, protocol, little):
    ranks = Ranks(2, dict(TINY, btl_sm_lockfree=protocol))
    header = LITTLE if little else HEADER
    try:
        sender, receiver = ranks.modules
        immediate = sender.immediate(ranks.endpoints[0][1], header, TAG_USR, sender.eager_limit)
        assert (immediate is None) is (little or protocol == "no"), (
            "an immediate send of its own in the lock-free protocol, for a network-order header"
        )
        sent = []
        for seq, (size, action) in enumerate(steps):
            data = payload(seq, max(size, 4))[:size]
            sent.append(header.pack(*fields_of(seq)) + data)
            send_like_the_pml(ranks, immediate, header, seq, data)
            if action == "progress":
                receiver.progress()
            elif action == "sender":
                sender.progress()  # retries its queue
        for _ in range(4 * len(steps) + 4):
            sender.progress()
            receiver.progress()
        assert ranks.inboxes[1] == sent
    finally:
        ranks.close()
        shmem_base.reset_selection()
    assert leftovers(ranks.jobid) == []


def test_the_locked_protocol_has_no_immediate_send_of_its_own(make_ranks):
    ranks = make_ranks(2, btl_sm_lockfree="no", **TINY)
    assert ranks.modules[0].immediate(ranks.endpoints[0][1], HEADER, TAG_USR, 128) is None


def test_a_record_over_the_limit_is_declined_and_nothing_is_written(make_ranks):
    ranks = make_ranks(2, **TINY)
    sender, receiver = ranks.modules
    immediate = sender.immediate(ranks.endpoints[0][1], HEADER, TAG_USR, 64)
    assert immediate(memoryview(bytes(64 - HEADER.size)), *fields_of(1))
    assert not immediate(memoryview(bytes(65 - HEADER.size)), *fields_of(2))
    huge = sender.immediate(ranks.endpoints[0][1], HEADER, TAG_USR, 1 << 20)
    assert not huge(memoryview(bytes(sender.max_send_size)), *fields_of(3)), (
        "the module's max_send_size bounds a record whatever limit the caller gives"
    )
    receiver.progress()
    assert ranks.inboxes[1] == [HEADER.pack(*fields_of(1)) + bytes(64 - HEADER.size)]


def test_the_immediate_send_declines_while_sends_are_queued(make_ranks):
    ranks = make_ranks(2, **TINY)
    sender = ranks.modules[0]
    immediate = sender.immediate(ranks.endpoints[0][1], HEADER, TAG_USR, sender.eager_limit)
    seq = 0
    while send_like_the_pml(ranks, immediate, HEADER, seq, payload(seq, 100)):
        seq += 1
    assert ranks.endpoints[0][1].queue, "the ring filled and a send was queued"
    ranks.modules[1].progress()  # room again, but the queue has not been retried yet
    assert ranks.endpoints[0][1].queue
    assert not immediate(memoryview(b"late"), *fields_of(seq + 1)), "it would overtake the queue"


def test_a_released_peer_raises_and_nothing_is_written(make_ranks):
    ranks = make_ranks(2, **TINY)
    sender = ranks.modules[0]
    endpoint = ranks.endpoints[0][1]
    immediate = sender.immediate(endpoint, HEADER, TAG_USR, sender.eager_limit)
    sender.del_procs([ranks.procs[1]], [endpoint])
    with pytest.raises(BtlPeerError, match="rank 1"):
        immediate(memoryview(b"too late"), *fields_of(0))


def test_a_sleeping_receiver_is_woken_by_an_immediate_send(make_ranks):
    ranks = make_ranks(2)
    sender, receiver = ranks.modules
    immediate = sender.immediate(ranks.endpoints[0][1], HEADER, TAG_USR, sender.eager_limit)
    bell = select.poll()
    bell.register(receiver.doorbell.fd, select.POLLIN)
    assert immediate(memoryview(b"awake"), *fields_of(0))
    assert bell.poll(0) == [], "a receiver that is not asleep costs the sender no syscall"
    receiver.progress()
    assert receiver.before_sleep() is True
    assert immediate(memoryview(b"wake up"), *fields_of(1))
    assert bell.poll(100), "the sleeping receiver's doorbell must ring"
    receiver.progress()
    assert ranks.inboxes[1] == [
        HEADER.pack(*fields_of(0)) + b"awake",
        HEADER.pack(*fields_of(1)) + b"wake up",
    ]
