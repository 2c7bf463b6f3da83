"""Non-contiguous messages through ob1: packed into fragments, unpacked where they land.

Over btl/self with the small limits of ``test_protocols_self`` (240 bytes eager, 1 KiB
fragments), so every protocol runs with small arrays; the strided numpy views are parsed into
convertor specs exactly as the API parses them.  Without RDMA a non-contiguous sender sends RNDV
and FRAGs, packed at their positions; with RDMA it packs the long message once into a buffer of
its own and offers that to RGET (which reads contiguous memory).  A non-contiguous receiver of
an RGET reads it piece by piece and unpacks each piece.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ob1_harness import Spy

from ompy.ompi.errors import ERR_TRUNCATE
from ompy.ompi.mca.pml import SendMode

SMALL = {"btl_self_eager_limit": 256, "btl_self_max_send_size": 1024}
FRAGS = {**SMALL, "pml_ob1_use_rdma": "false"}
RGET = {**SMALL, "pml_ob1_use_rdma": "true"}


def strided(count: int, step: int, seed: int) -> np.ndarray:
    """``count`` doubles every ``step`` of a larger array (a non-contiguous view)."""
    return (np.arange(count * step, dtype="d") + seed * 1e5)[::step]


@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
@pytest.mark.parametrize("count", [0, 1, 30, 31, 200, 5000])
def test_a_long_strided_send_packs_each_fragment_or_once_for_rget(make_world, params, count):
    world = make_world(1, **params)
    spy = Spy(world, 0)
    data = strided(count, 3, count)
    out = np.zeros(count)
    receive = world.irecv(0, out, 0, 5)
    # Synchronous: a long standard send to this very process would go as a private packed
    # copy (contiguous), while this one streams from the strided array itself.
    send = world.isend(0, data, 0, 5, mode=SendMode.SYNCHRONOUS)
    world.wait(send, receive)
    assert np.array_equal(out, data) and receive.count == 8 * count
    if params is RGET and 8 * count + 32 > 256:  # long: packed once, then got in one piece
        expected = {"RGET": 1, "FIN": 1}
    else:
        frags = -(-max(8 * count - 224, 0) // (1024 - 32))
        expected = {"RNDV": 1, "ACK": 1, "FRAG": frags}
    assert dict(spy.counts) == {name: n for name, n in expected.items() if n}


def test_a_short_strided_send_is_packed_into_one_eager_fragment(make_world):
    world = make_world(1, **RGET)
    spy = Spy(world, 0)
    data = strided(30, 5, 2)
    out = np.zeros(30)
    receive = world.irecv(0, out, 0, 5)
    send = world.isend(0, data, 0, 5)
    assert send.complete
    world.wait(receive)
    assert np.array_equal(out, data) and dict(spy.counts) == {"MATCH": 1}


@pytest.mark.parametrize("params", [FRAGS, RGET], ids=["frags", "rget"])
@pytest.mark.parametrize("count", [1, 30, 200, 5000, 300_000])  # 2.4 MB: RGET in 3 pieces
def test_a_strided_receive_unpacks_each_fragment_in_place(make_world, params, count):
    world = make_world(1, **params)
    spy = Spy(world, 0)
    data = np.arange(count, dtype="d") + 0.5
    target = np.full(4 * count, -1.0)
    receive = world.irecv(0, target[1::4], 0, 6)
    send = world.isend(0, data, 0, 6)
    world.wait(send, receive)
    assert np.array_equal(target[1::4], data) and receive.count == 8 * count
    rest = np.delete(target, np.arange(1, 4 * count, 4))
    assert (rest == -1).all()
    if params is RGET and 8 * count + 16 > 256:
        assert spy.counts["RGET"] == 1  # the contiguous sender offered a get; read in pieces


@settings(max_examples=40, deadline=None)
@given(
    st.integers(0, 700),
    st.integers(1, 4),
    st.integers(1, 4),
    st.sampled_from(["frags", "rget"]),
    st.sampled_from([SendMode.STANDARD, SendMode.SYNCHRONOUS]),
)
def test_any_strided_pair_arrives_intact(count, step_out, step_in, protocol, mode):
    from ob1_harness import World

    world = World(1, "self", **(FRAGS if protocol == "frags" else RGET))
    try:
        data = strided(count, step_out, 7)
        target = np.full(count * step_in, -1.0)
        receive = world.irecv(0, target[::step_in], 0, 1)
        send = world.isend(0, data, 0, 1, mode=mode)
        world.wait(send, receive)
        assert np.array_equal(target[::step_in], data)
        untouched = np.ones(target.size, bool)
        untouched[::step_in] = False
        assert (target[untouched] == -1).all()
    finally:
        world.finalize()


def test_a_truncated_packed_receive_delivers_what_fits(make_world):
    world = make_world(1, **FRAGS)
    data = strided(300, 2, 1)
    target = np.full(200, -1.0)
    receive = world.irecv(0, target[::2], 0, 2)
    send = world.isend(0, data, 0, 2)
    world.wait(send, receive)
    assert receive.error == ERR_TRUNCATE and receive.count == 800
    assert np.array_equal(target[::2], data[:100]) and (target[1::2] == -1).all()


def test_a_long_strided_send_to_this_process_completes_at_once(make_world):
    world = make_world(1, **FRAGS)
    data = strided(1000, 2, 3)
    send = world.isend(0, data, 0, 3)
    assert send.complete  # a private packed copy carries it
    out = np.zeros(1000)
    receive = world.irecv(0, out, 0, 3)
    world.wait(receive)
    assert np.array_equal(out, data)


def test_strided_messages_cross_tcp(make_world):
    world = make_world(2, "self,tcp")
    data = strided(40_000, 2, 4)
    target = np.full((40_000, 3), -1.0)
    receive = world.irecv(1, target[:, 2], 0, 4)
    send = world.isend(0, data, 1, 4)
    world.wait(send, receive)
    assert np.array_equal(target[:, 2], data) and (target[:, :2] == -1).all()
