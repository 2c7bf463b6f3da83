"""Lowercase methods: pickle protocol 5 with out-of-band buffers, wildcards, matched probes."""

import pickle

import numpy as np
import pytest

from ompy.ompi import errors
from ompy.ompi.api.message import Message
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG
from ompy.ompi.status import Status
from ompy.opal import codec


def test_large_arrays_leave_the_stream_and_small_ones_stay_in_it():
    big = np.arange(codec.DEFAULT_THRESHOLD, dtype=np.uint8)
    small = np.arange(10)
    encoded = codec.Encoded.of(codec.Pickle(), {"big": big, "small": small, "text": "hi"})
    assert len(encoded.buffers) == 1
    assert encoded.buffers[0].obj is big or np.shares_memory(
        np.asarray(encoded.buffers[0]), big
    )  # no copy on the way out
    stream, channel, sizes = codec.parse_frame(encoded.view)
    assert sizes == [big.nbytes] and channel == 0
    assert stream.nbytes < 1024
    strided = codec.Encoded.of(codec.Pickle(), np.arange(100_000)[::2])  # not contiguous
    assert strided.buffers == []


def test_a_message_sent_with_send_is_refused_clearly_by_recv():
    with pytest.raises(codec.FramingError, match="uppercase method"):
        codec.parse_frame(memoryview(b"\x00" * 5))
    sender, receiver = make_world(2)
    sender.Send(b"\x00" * 5, 1, tag=3)
    with pytest.raises(errors.Exception, match="uppercase method"):
        receiver.recv(source=0, tag=3)


def test_objects_with_out_of_band_buffers_arrive_intact_and_writable():
    worlds = make_world(3)

    def body(comm):
        if comm.rank != 0:
            payload = {
                "rank": comm.rank,
                "array": np.full(50_000, comm.rank, dtype=np.float64),
                "bytes": bytearray(b"x" * 40_000),
            }
            comm.send(payload, 0, tag=comm.rank)
            assert comm.recv(source=0) == "go"
            comm.ssend(("sync", comm.rank), 0, tag=7)
            return None
        got = {}
        status = Status()
        for _ in range(2):
            obj = comm.recv(source=ANY_SOURCE, tag=ANY_TAG, status=status)
            assert status.tag == status.source == obj["rank"]
            assert obj["array"].flags.writeable
            obj["array"][0] = -1  # a received array is the program's to change
            got[obj["rank"]] = (obj["array"][1:].sum(), len(obj["bytes"]))
        for peer in (1, 2):
            comm.send("go", peer)
        syncs = sorted(comm.recv(tag=7) for _ in range(2))
        return got, syncs

    got, syncs = run_ranks(worlds, body)[0]
    assert got == {1: (49_999.0, 40_000), 2: (2 * 49_999.0, 40_000)}
    assert syncs == [("sync", 1), ("sync", 2)]


def test_buffers_of_two_messages_in_flight_never_mix():
    sender, receiver = make_world(2)
    first = np.full(30_000, 1.0)
    second = np.full(30_000, 2.0)
    requests = [sender.isend(first, 1, tag=1), sender.isend(second, 1, tag=2)]
    assert receiver.recv(source=0, tag=2).mean() == 2.0  # taken out of order
    assert receiver.recv(source=0, tag=1).mean() == 1.0
    for request in requests:
        request.wait()


def test_probe_mprobe_and_message_methods_on_pickled_messages():
    sender, receiver = make_world(2)
    sender.send([1, 2, 3], 1, tag=4)
    sender.send(np.ones(20_000), 1, tag=5)
    status = Status()
    assert receiver.probe(status=status) is True and status.tag == 4
    assert receiver.iprobe(0, 6) is False
    message = receiver.mprobe(0, 4)
    assert isinstance(message, Message)
    assert message.recv() == [1, 2, 3]
    message = Message.iprobe(receiver, 0, 5)
    request = message.irecv()
    assert request.wait().sum() == 20_000
    assert receiver.improbe() is None
    sender.send("via Message.probe", 1)
    assert Message.probe(receiver).recv() == "via Message.probe"


def test_sendrecv_exchanges_objects():
    worlds = make_world(2)
    results = run_ranks(
        worlds, lambda c: c.sendrecv(("from", c.rank), 1 - c.rank, 3, None, 1 - c.rank, 3)
    )
    assert results == [("from", 1), ("from", 0)]


def test_an_unpicklable_object_raises_at_the_sender():
    sender, _ = make_world(2)
    with pytest.raises((pickle.PicklingError, TypeError, AttributeError)):
        sender.send(lambda: None, 1)
