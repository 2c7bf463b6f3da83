"""MPI.Pickle / MPI.pickle: the one codec of every lowercase call, point-to-point and collective.

A json codec shows that it was used: a tuple comes out as a list, which pickle never does.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from ompy import MPI
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.opal import codec


def json_codec(log=None):
    def dumps(obj):
        if log is not None:
            log.append(obj)
        return json.dumps(obj).encode()

    def loads(data):
        return json.loads(bytes(data).decode())

    return MPI.Pickle(dumps, loads)


def test_mpi_exports_the_codec_class_and_its_process_wide_instance():
    assert MPI.Pickle is codec.Pickle
    assert MPI.pickle is codec.pickle
    assert "Pickle" in MPI.__all__ and "pickle" in MPI.__all__
    (world,) = make_world(1)
    assert world._c.instance.codec is MPI.pickle  # instances use MPI.pickle by default


def test_a_custom_codec_serializes_send_and_recv():
    worlds = make_world(2)
    logs = [[], []]
    for rank, world in enumerate(worlds):
        world._c.instance.codec = json_codec(logs[rank])

    def body(comm):
        if comm.rank == 0:
            comm.send((1, "two", [3]), 1, tag=5)
            request = comm.isend({"k": (4, 5)}, 1, tag=6)
            request.wait()
            return None
        first = comm.recv(source=0, tag=5)
        second = comm.irecv(source=0, tag=6).wait()
        return first, second

    assert run_ranks(worlds, body)[1] == ([1, "two", [3]], {"k": [4, 5]})
    assert logs[0] == [(1, "two", [3]), {"k": (4, 5)}]


def test_a_custom_codec_serializes_object_collectives():
    worlds = make_world(3)
    for world in worlds:
        world._c.instance.codec = json_codec()

    def body(comm):
        shared = comm.bcast((comm.rank, "root") if comm.rank == 1 else None, root=1)
        total = comm.allreduce((comm.rank,), op=lambda a, b: list(a) + list(b))
        gathered = comm.gather((comm.rank,), root=0)
        return shared, total, gathered

    results = run_ranks(worlds, body)
    for rank, (shared, total, gathered) in enumerate(results):
        assert shared == [1, "root"]  # a list: json carried it, even on the root
        assert total == [0, 1, 2]
        assert gathered == ([[0], [1], [2]] if rank == 0 else None)


def test_configuring_mpi_pickle_changes_every_lowercase_call():
    worlds = make_world(2)
    try:
        MPI.pickle.__init__(json_codec().dumps, json_codec().loads)

        def body(comm):
            if comm.rank == 0:
                comm.send((1, 2), 1)
            got = comm.recv(source=0) if comm.rank == 1 else None
            return got, comm.allreduce((comm.rank,), op=lambda a, b: [*a, *b])

        assert run_ranks(worlds, body) == [(None, [0, 1]), ([1, 2], [0, 1])]
    finally:
        MPI.pickle.__init__()
    assert MPI.pickle.PROTOCOL == 5


@pytest.mark.parametrize("threshold", [0, 1 << 30])
def test_the_threshold_decides_what_travels_out_of_band(threshold):
    worlds = make_world(2)
    for world in worlds:
        world._c.instance.codec = MPI.Pickle(threshold=threshold)
    array = np.arange(1000, dtype=np.int64)

    def body(comm):
        if comm.rank == 0:
            comm.send(array, 1)
            channels = dict(comm._c.channels)  # one per message with out-of-band buffers
            return channels, comm.bcast(array, root=0)
        got = comm.recv(source=0)
        assert got.flags.writeable
        return got, comm.bcast(None, root=0)

    (channels, sent_back), (received, broadcast) = run_ranks(worlds, body)
    assert channels == ({1: 1} if threshold == 0 else {})
    assert np.array_equal(received, array) and np.array_equal(broadcast, array)
    assert sent_back is not array and np.array_equal(sent_back, array)  # the root's own copy
