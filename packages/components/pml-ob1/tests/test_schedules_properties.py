"""Random schedules of sends and receives through the whole PML over btl/self.

Several communicators, tags (one of them negative), sizes on every side of the eager and
fragment limits, standard and synchronous sends, specific and wildcard receives, interleaved
at random.  A model of MPI's rules predicts, for every receive, which message it must get: the
earliest sent, still unmatched message of its communicator that it admits (a receive posted
earlier is served first).  Every message must arrive exactly once, intact, where the model
says; receives left over are cancelled and must receive nothing.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ob1_harness import World, pattern

from ompy.ompi.constants import ANY_SOURCE, ANY_TAG
from ompy.ompi.mca.pml import SendMode

COMMS = [0, 1, 2]
TAGS = [0, 1, -3]
SIZES = [0, 1, 240, 241, 1100, 5000]
LIMITS = {"btl_self_eager_limit": 256, "btl_self_max_send_size": 1024}

sends = st.tuples(
    st.just("send"), st.sampled_from(COMMS), st.sampled_from(TAGS), st.sampled_from(SIZES),
    st.booleans(),
)  # fmt: skip
receives = st.tuples(
    st.just("recv"), st.sampled_from(COMMS), st.sampled_from([0, ANY_SOURCE]),
    st.sampled_from([*TAGS, ANY_TAG]),
)  # fmt: skip


def admits(want: int, tag: int) -> bool:
    return want == tag or (want == ANY_TAG and tag >= 0)


class Model:
    """MPI matching for one sender per communicator: who gets what."""

    def __init__(self) -> None:
        self.unmatched = {ctx: [] for ctx in COMMS}  # message ids in send order
        self.posted = {ctx: [] for ctx in COMMS}  # (receive id, tag) in posting order
        self.expect: dict[int, int] = {}  # receive id -> message id
        self.tags: dict[int, int] = {}

    def send(self, ctx: int, message: int, tag: int) -> None:
        self.tags[message] = tag
        for index, (receive, want) in enumerate(self.posted[ctx]):
            if admits(want, tag):
                del self.posted[ctx][index]
                self.expect[receive] = message
                return
        self.unmatched[ctx].append(message)

    def recv(self, ctx: int, receive: int, want: int) -> None:
        for index, message in enumerate(self.unmatched[ctx]):
            if admits(want, self.tags[message]):
                del self.unmatched[ctx][index]
                self.expect[receive] = message
                return
        self.posted[ctx].append((receive, want))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(st.one_of(sends, receives), min_size=1, max_size=30),
    use_rdma=st.booleans(),
)
def test_random_schedules_deliver_every_message_once_intact_and_in_mpi_order(steps, use_rdma):
    world = World(1, "self", pml_ob1_use_rdma=str(use_rdma).lower(), **LIMITS)
    try:
        comms = {ctx: world.comm(ctx) if ctx else world.world for ctx in COMMS}
        model = Model()
        messages, send_requests = [], []
        receive_requests, buffers = [], []
        for step in steps:
            if step[0] == "send":
                _, ctx, tag, size, synchronous = step
                message = len(messages)
                messages.append((size, tag))
                mode = SendMode.SYNCHRONOUS if synchronous else SendMode.STANDARD
                request = world.isend(0, pattern(size, message), 0, tag, comm=comms[ctx], mode=mode)
                send_requests.append(request)
                model.send(ctx, message, tag)
            else:
                _, ctx, source, tag = step
                receive = len(receive_requests)
                buffers.append(np.zeros(max(SIZES), np.uint8))
                receive_requests.append(world.irecv(0, buffers[-1], source, tag, comm=comms[ctx]))
                model.recv(ctx, receive, tag)
            world.engine.progress()
        # drain: a receive for each message still unmatched, then cancel the leftovers
        for ctx in COMMS:
            for message in list(model.unmatched[ctx]):
                receive = len(receive_requests)
                buffers.append(np.zeros(max(SIZES), np.uint8))
                tag = messages[message][1]
                receive_requests.append(world.irecv(0, buffers[-1], 0, tag, comm=comms[ctx]))
                model.recv(ctx, receive, tag)
        leftovers = [r for ctx in COMMS for r, _ in model.posted[ctx]]
        for receive in leftovers:
            receive_requests[receive].cancel()
        world.wait(*send_requests, *receive_requests, timeout=10)

        got = set()
        for receive, request in enumerate(receive_requests):
            if receive in leftovers:
                assert request.cancelled and not buffers[receive].any()
                continue
            message = model.expect[receive]
            size, tag = messages[message]
            assert not request.cancelled and request.error == 0
            assert (request.source, request.tag, request.count) == (0, tag, size)
            assert np.array_equal(buffers[receive][:size], pattern(size, message))
            got.add(message)
        assert got == set(range(len(messages))), "every message exactly once"
        for pml in world.pmls:
            assert pml.idle and not pml._recvs
            assert all(s.matching.posted_count == s.matching.unexpected_count == 0 for s in
                       pml._comms.values())  # fmt: skip
    finally:
        world.finalize()
