"""btl/sm in one process: rings, wrap-around, back-pressure, both protocols, the doorbell."""

from __future__ import annotations

import os
import select

import pytest

from ompy.opal.mca.btl import BtlError, BtlFlags, BtlUnsupportedError
from ompy.opal.mca.btl.base import TAG_USR

from .conftest import leftovers

PROTOCOLS = [pytest.param("auto", id="lock-free"), pytest.param("no", id="locked")]
TINY = {
    "btl_sm_fbox_size": 1024,
    "btl_sm_max_send_size": 256,
    "btl_sm_eager_limit": 128,
}


def payload(seq: int, size: int) -> bytes:
    return seq.to_bytes(4, "little") + bytes((seq + i) % 251 for i in range(size - 4))


def send(ranks, src: int, dst: int, data: bytes) -> bool:
    """Send like the PML: sendi, else a descriptor (which queues when the ring is full)."""
    module = ranks.modules[src]
    endpoint = ranks.endpoints[src][dst]
    if module.sendi(endpoint, b"", memoryview(data), TAG_USR):
        return True
    descriptor = module.prepare_src(endpoint, memoryview(data), 0)
    assert descriptor.data_length == len(data)
    return module.send(endpoint, descriptor, TAG_USR)


@pytest.mark.parametrize("lockfree", PROTOCOLS)
def test_records_of_every_size_wrap_around_the_ring_in_order(make_ranks, lockfree):
    ranks = make_ranks(2, btl_sm_lockfree=lockfree, **TINY)
    assert ranks.modules[0].lock_free is (lockfree == "auto")
    sent = [payload(seq, 4 + seq % 253) for seq in range(600)]
    for seq, data in enumerate(sent):
        assert send(ranks, 0, 1, data), "a ring drained every 2 records never fills"
        if seq % 2:
            ranks.modules[1].progress()
    ranks.modules[1].progress()
    assert ranks.inboxes[1] == sent
    (inbox,) = [i for i in ranks.modules[1].inboxes if i.index == 0]
    assert inbox.counter > 50 * inbox.size, "the ring must have wrapped many times"


@pytest.mark.parametrize("lockfree", PROTOCOLS)
def test_a_full_ring_queues_in_order_and_loses_nothing(make_ranks, lockfree):
    ranks = make_ranks(2, btl_sm_lockfree=lockfree, **TINY)
    sender, receiver = ranks.modules
    sent = [payload(seq, 4 + (seq * 37) % 253) for seq in range(300)]
    results = [send(ranks, 0, 1, data) for data in sent]  # the receiver does not progress
    first_queued = results.index(False)
    assert all(results[:first_queued]) and not any(results[first_queued:]), (
        "once one send is queued, every later one queues behind it (order per peer)"
    )
    assert sender.queued_sends == len(sent) - first_queued
    assert len(ranks.inboxes[1]) == 0
    for _ in range(10_000):
        if len(ranks.inboxes[1]) == len(sent):
            break
        receiver.progress()
        sender.progress()
    assert ranks.inboxes[1] == sent
    assert not ranks.endpoints[0][1].queue


def test_sendi_declines_while_sends_are_queued(make_ranks):
    ranks = make_ranks(2, btl_sm_finalize_timeout=0.05, **TINY)
    while send(ranks, 0, 1, payload(0, 200)):
        pass
    assert not ranks.modules[0].sendi(ranks.endpoints[0][1], b"", memoryview(b"late"), TAG_USR)


def test_every_local_peer_is_reached_and_nobody_else(make_ranks):
    ranks = make_ranks(3)
    for rank, endpoints in enumerate(ranks.endpoints):
        assert endpoints[rank] is None
        assert [e.proc.rank for e in endpoints if e is not None] == [
            r for r in range(3) if r != rank
        ]
    for src in range(3):
        for dst in range(3):
            if src != dst:
                assert send(ranks, src, dst, b"%d->%d" % (src, dst))
    for module in ranks.modules:
        module.progress()
    for dst in range(3):
        assert sorted(ranks.inboxes[dst]) == [b"%d->%d" % (s, dst) for s in range(3) if s != dst]


def test_segments_are_unlinked_once_every_peer_attached(make_ranks):
    ranks = make_ranks(3)
    paths = [module.segment.descriptor.path for module in ranks.modules]
    assert all(os.path.basename(p).startswith(f"ompy-{ranks.jobid}-") for p in paths)
    assert not any(os.path.exists(p) for p in paths)
    assert leftovers(ranks.jobid) == []


def test_a_sleeping_receiver_gets_its_doorbell_rung_and_an_awake_one_does_not(make_ranks):
    ranks = make_ranks(2)
    receiver = ranks.modules[1]
    bell = select.poll()
    bell.register(receiver.doorbell.fd, select.POLLIN)
    assert send(ranks, 0, 1, b"awake")
    assert bell.poll(0) == [], "a receiver that is not asleep costs the sender no syscall"
    receiver.progress()
    assert receiver.before_sleep() is True, "nothing pending: the receiver may sleep"
    assert send(ranks, 0, 1, b"wake up")
    assert bell.poll(100), "the sleeping receiver's doorbell must ring"
    receiver.progress()
    assert ranks.inboxes[1] == [b"awake", b"wake up"]
    assert send(ranks, 0, 1, b"awake again")
    assert bell.poll(0) == [], "waking clears the sleeping flags"


def test_the_sleep_hook_refuses_to_sleep_when_a_record_is_waiting(make_ranks):
    ranks = make_ranks(2)
    assert send(ranks, 0, 1, b"already there")
    assert ranks.modules[1].before_sleep() is False


def test_get_and_put_copy_through_cross_memory_attach(make_ranks):
    ranks = make_ranks(2)
    owner, reader = ranks.modules
    assert reader.flags & BtlFlags.GET and reader.flags & BtlFlags.PUT
    region = bytearray(b"remote memory!")
    handle = owner.register_mem(memoryview(region))
    local = bytearray(6)
    reader.get(ranks.endpoints[1][0], memoryview(local), handle, 7)
    assert local == b"memory"
    done = []
    reader.put(ranks.endpoints[1][0], memoryview(b"REMOTE"), handle, 0, done.append)
    assert region == b"REMOTE memory!" and done == [None]
    with pytest.raises(BtlError, match="outside the remote region"):
        reader.get(ranks.endpoints[1][0], memoryview(bytearray(8)), handle, 7)
    owner.deregister_mem(handle)
    with pytest.raises(KeyError):
        owner.deregister_mem(handle)


def test_read_only_and_offset_regions_are_addressed_exactly(make_ranks):
    ranks = make_ranks(2)
    owner, reader = ranks.modules
    frozen = b"0123456789abcdef"  # bytes: read-only (a pickled stream), addressed another way
    sliced = memoryview(bytearray(b"xxxyyyzzz"))[3:]  # writable, starting inside its object
    for region, want in ((memoryview(frozen)[4:], b"456789"), (sliced, b"yyyzzz")):
        handle = owner.register_mem(region)
        local = bytearray(6)
        reader.get(ranks.endpoints[1][0], memoryview(local), handle, 0)
        assert local == want
        owner.deregister_mem(handle)


def test_without_cma_there_is_no_get_or_put(make_ranks):
    ranks = make_ranks(2, btl_sm_use_cma="no")
    module = ranks.modules[0]
    assert module.flags == BtlFlags.SEND | BtlFlags.SENDI
    with pytest.raises(BtlUnsupportedError):
        module.get(ranks.endpoints[0][1], memoryview(bytearray(1)), None, 0)


def test_a_fragment_larger_than_the_ring_is_refused_naming_both_parameters(make_ranks):
    with pytest.raises(BtlError, match=r"btl_sm_max_send_size.*btl_sm_fbox_size"):
        make_ranks(2, btl_sm_fbox_size=1024, btl_sm_max_send_size=1024, btl_sm_eager_limit=64)


def test_a_ring_size_that_is_not_a_power_of_two_is_refused(make_ranks):
    with pytest.raises(ValueError, match="btl_sm_fbox_size must be a power of two"):
        make_ranks(2, btl_sm_fbox_size=3000)
