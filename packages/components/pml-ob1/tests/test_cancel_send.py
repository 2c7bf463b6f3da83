"""Cancelling sends: withdrawn while unmatched at the receiver, else completed as sent.

The receiver decides (it owns the matching): a message that waits unmatched in its unexpected
queue is removed, and no receive or probe ever sees it; a message already matched (or taken by
mprobe) stays, and the send completes uncancelled.  Over btl/self (one process) and over real
loopback TCP connections between simulated ranks.
"""

from __future__ import annotations

import numpy as np
import pytest
from ob1_harness import pattern

from ompy.ompi.datatype.buffer import parse_buffer
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.pml import SendMode
from ompy.opal.mca.btl import BtlError

pytestmark = pytest.mark.timeout(120)

SMALL = {"btl_self_eager_limit": 256, "btl_self_max_send_size": 1024}
FRAGS = {**SMALL, "pml_ob1_use_rdma": "false"}
RGET = {**SMALL, "pml_ob1_use_rdma": "true"}
EAGER, LONG = 100, 5000
MODES = [SendMode.STANDARD, SendMode.SYNCHRONOUS]


def cancelled_then_next_arrives(world, sender, receiver, size, mode):
    """Cancel an unmatched send, then check the next message with the same tag is received."""
    send = world.isend(sender, pattern(size, 1), receiver, 5, mode=mode)
    world.settle()  # the message reaches the receiver's unexpected queue
    send.cancel()
    world.wait(send)
    assert send.cancelled
    follow = pattern(size, 2)
    out = np.zeros(size, np.uint8)
    world.wait(world.isend(sender, follow, receiver, 5), world.irecv(receiver, out, sender, 5))
    assert np.array_equal(out, follow), "the receive got the cancelled message"
    assert world.pmls[receiver]._comms[0].matching.unexpected_count == 0
    assert world.pmls[sender].idle


@pytest.mark.parametrize("mode", MODES, ids=["standard", "synchronous"])
@pytest.mark.parametrize("size", [0, EAGER, LONG], ids=["empty", "eager", "rendezvous"])
@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
def test_an_unmatched_send_to_oneself_is_withdrawn(make_world, params, size, mode):
    world = make_world(1, **params)
    cancelled_then_next_arrives(world, 0, 0, size, mode)
    if params is RGET:
        assert world.btl_modules(0)[0]._regions == {}, "the registration was released"


@pytest.mark.parametrize("mode", MODES, ids=["standard", "synchronous"])
@pytest.mark.parametrize("size", [EAGER, 200_000], ids=["eager", "rendezvous"])
def test_an_unmatched_send_over_tcp_is_withdrawn(make_world, size, mode):
    world = make_world(2, "self,tcp")
    cancelled_then_next_arrives(world, 0, 1, size, mode)


@pytest.mark.parametrize("size", [EAGER, LONG])
def test_a_matched_send_is_not_cancelled(make_world, size):
    world = make_world(1, **FRAGS)
    out = np.zeros(size, np.uint8)
    receive = world.irecv(0, out, 0, 3)
    send = world.isend(0, pattern(size), 0, 3, mode=SendMode.SYNCHRONOUS)
    world.wait(receive)
    send.cancel()
    world.wait(send)
    assert not send.cancelled and np.array_equal(out, pattern(size))


def test_a_probed_message_can_still_be_withdrawn_but_not_once_mprobed(make_world):
    world = make_world(1, **FRAGS)
    comm = world.world[0]
    pml = world.pmls[0]
    send = world.isend(0, pattern(EAGER), 0, 8)
    assert pml.iprobe(0, 8, comm) is not None  # a probe leaves it in place
    send.cancel()
    world.wait(send)
    assert send.cancelled and pml.iprobe(0, 8, comm) is None
    send = world.isend(0, pattern(EAGER), 0, 8)
    message = pml.improbe(0, 8, comm)
    send.cancel()
    world.wait(send)
    assert not send.cancelled
    out = np.zeros(EAGER, np.uint8)
    world.wait(pml.imrecv(parse_buffer(out, readonly=False), message))
    assert np.array_equal(out, pattern(EAGER))


def test_cancelling_twice_asks_once_and_the_send_waits_for_the_answer(make_world):
    world = make_world(2, "self,tcp")
    send = world.isend(0, pattern(EAGER), 1, 1)
    world.settle()
    assert send.complete  # eager: complete at once
    send.cancel()
    send.cancel()
    assert len(world.pmls[0]._cancels) == 1
    assert not send.complete and not world.pmls[0].idle  # until the receiver answers
    world.wait(send)
    send.cancel()  # already cancelled: nothing more to ask
    assert send.cancelled and not world.pmls[0]._cancels


def test_a_cancel_the_receiver_cannot_be_asked_for_is_an_mpi_error_not_a_hang(
    make_world, monkeypatch
):
    world = make_world(1, **FRAGS)
    pml = world.pmls[0]
    send = world.isend(0, pattern(EAGER), 0, 1)

    def unreachable(*_args):
        raise BtlError("the peer is gone")

    monkeypatch.setattr(pml, "_send_control", unreachable)
    with pytest.raises(MPIException, match="cannot ask rank 0 to withdraw"):
        send.cancel()
    assert send.complete and not send.cancelled and not pml._cancels


def test_a_failed_send_is_left_as_it_failed(make_world):
    world = make_world(1, **RGET)
    pml = world.pmls[0]
    (module,) = world.btl_modules(0)
    send = world.isend(0, pattern(LONG), 0, 2, mode=SendMode.SYNCHRONOUS)
    pml._btl_error(module, pml._peers[0].send[0].endpoint, ConnectionResetError("gone"))
    send.cancel()
    assert send.complete and send.error and not send.cancelled and not pml._cancels
