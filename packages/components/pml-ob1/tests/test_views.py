"""The API's entry points into ob1: byte views instead of buffer specs, and receives sized by
the message they match (how pickled objects are received without a probe).

Over btl/self with small limits (as in ``test_protocols_self``), so that every protocol runs:
up to 240 bytes eager, longer by rendezvous with fragments or with an RDMA get.
"""

from __future__ import annotations

import numpy as np
import pytest
from ob1_harness import pattern

from ompy.ompi.constants import ANY_SOURCE, ANY_TAG
from ompy.ompi.errors import ERR_RANK
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.pml import SendMode

SMALL = {"btl_self_eager_limit": 256, "btl_self_max_send_size": 1024}
FRAGS = {**SMALL, "pml_ob1_use_rdma": "false"}
RGET = {**SMALL, "pml_ob1_use_rdma": "true"}
SIZES = [0, 1, 240, 241, 5000]


def view(data: np.ndarray) -> memoryview:
    return memoryview(data).cast("B")


def test_an_eager_blocking_send_leaves_at_once_and_makes_no_request(make_world):
    world = make_world(1)
    pml, comm = world.pmls[0], world.world[0]
    data = pattern(100, 1)
    assert pml.send_view(view(data), 0, 3, comm) is None
    out = np.zeros(100, np.uint8)
    receive = world.irecv(0, out, 0, 3)
    world.wait(receive)
    assert np.array_equal(out, data) and (receive.source, receive.tag, receive.count) == (0, 3, 100)


def test_a_long_blocking_send_returns_the_request_to_wait_on(make_world):
    world = make_world(1, **FRAGS)
    pml, comm = world.pmls[0], world.world[0]
    data = pattern(5000, 2)
    out = np.zeros(5000, np.uint8)
    receive = pml.irecv_view(view(out), 0, 4, comm)
    send = pml.send_view(view(data), 0, 4, comm)
    assert send is not None
    world.wait(send, receive)
    assert send.error == 0 and np.array_equal(out, data)


def test_views_are_checked_like_specs(make_world):
    world = make_world(1)
    pml, comm = world.pmls[0], world.world[0]
    with pytest.raises(MPIException, match=r"destination 3 is not in 0\.\.0") as error:
        pml.send_view(view(pattern(8)), 3, 0, comm)
    assert error.value.error_class == ERR_RANK
    with pytest.raises(MPIException, match="source 2 is not ANY_SOURCE"):
        pml.irecv_view(None, 2, 0, comm)


@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("posted_first", [True, False], ids=["posted", "unexpected"])
def test_a_receive_sized_by_its_message_gets_exactly_the_message(
    make_world, params, size, posted_first
):
    world = make_world(1, **params)
    pml, comm = world.pmls[0], world.world[0]
    data = pattern(size, size)
    if posted_first:
        receive = pml.irecv_view(None, ANY_SOURCE, ANY_TAG, comm)
        assert receive.view is None, "no buffer before the match"
        send = world.isend(0, data, 0, 6)
    else:
        send = world.isend(0, data, 0, 6)
        receive = pml.irecv_view(None, ANY_SOURCE, ANY_TAG, comm)
    world.wait(send, receive)
    assert (receive.source, receive.tag, receive.count, receive.error) == (0, 6, size, 0)
    assert len(receive.view) == size and not receive.view.readonly
    assert bytes(receive.view) == data.tobytes()


def test_a_receive_sized_by_its_message_keeps_its_place_in_matching_order(make_world):
    world = make_world(1, **FRAGS)
    pml, comm = world.pmls[0], world.world[0]
    sized = pml.irecv_view(None, 0, 7, comm)
    out = np.zeros(300, np.uint8)
    fixed = world.irecv(0, out, 0, 7)
    first, second = pattern(5000, 1), pattern(300, 2)
    world.wait(world.isend(0, first, 0, 7), world.isend(0, second, 0, 7), sized, fixed)
    assert bytes(sized.view) == first.tobytes() and np.array_equal(out, second)


def test_a_matched_probe_can_be_received_into_a_buffer_of_its_size(make_world):
    world = make_world(1, **RGET)
    pml, comm = world.pmls[0], world.world[0]
    data = pattern(5000, 3)
    send = world.isend(0, data, 0, 8)
    world.engine.progress()
    message = pml.improbe(0, 8, comm)
    receive = pml.imrecv(None, message)
    world.wait(send, receive)
    assert bytes(receive.view) == data.tobytes() and receive.count == 5000


def test_a_sized_receive_can_be_cancelled_before_it_matches(make_world):
    world = make_world(1)
    pml, comm = world.pmls[0], world.world[0]
    receive = pml.irecv_view(None, 0, 9, comm)
    receive.cancel()
    assert receive.complete and receive.cancelled and receive.view is None
    send = pml.isend_view(view(pattern(10)), 0, 9, comm, SendMode.STANDARD)
    world.settle()
    assert send.complete and pml.iprobe(0, 9, comm) is not None, "the message stays unexpected"
    world.wait(world.irecv(0, np.zeros(10, np.uint8), 0, 9))
