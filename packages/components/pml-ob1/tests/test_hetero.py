"""Receiver makes right: a typed message staged as its sender wrote it, converted, unpacked.

:class:`~ompy.mca.pml.ob1.hetero.ConvertedRecv` is driven here with a completed sized receive
standing for the PML's, so that architectures no process of this machine has can be used: a
big-endian sender whose ``long`` is 4 bytes (this machine's is 8), which the simulated byte
order of the integration tests cannot show.
"""

from __future__ import annotations

from types import SimpleNamespace

import attrs
import numpy as np
import pytest

from ompy.mca.pml.ob1.hetero import ConvertedRecv, typed, wire_stream
from ompy.ompi.datatype.buffer import parse_buffer
from ompy.ompi.datatype.predefined import BYTE, INT, LONG
from ompy.ompi.errors import ERR_TRUNCATE, ERR_TYPE
from ompy.opal.datatype.arch import MODEX_KEY, Arch, PeerArchs

LOCAL = Arch.local()
BIG_ILP32 = attrs.evolve(LOCAL.with_byteorder("big"), c_long=4)


class Modex:
    """The one modex call PeerArchs makes: rank 1 published ``BIG_ILP32``."""

    def get(self, rank: int, key: str) -> bytes:
        assert key == MODEX_KEY
        return (BIG_ILP32 if rank == 1 else LOCAL).encode()


def deliver(data: bytes, buffer) -> ConvertedRecv:
    """A receive into ``buffer`` of ``data`` as rank 1 (world rank 1) sent it."""
    inner = SimpleNamespace(
        complete=True,
        cancelled=False,
        exception=None,
        error=0,
        source=1,
        tag=5,
        count=len(data),
        view=memoryview(bytearray(data)),
    )
    state = SimpleNamespace(keys=(0, 1))  # the sender, comm rank 1, is world rank 1
    return ConvertedRecv(inner, parse_buffer(buffer, readonly=False), state, PeerArchs(Modex()))


@pytest.mark.skipif(LOCAL.c_long != 8, reason="needs an 8-byte long here")
def test_longs_grow_and_swap():
    out = np.zeros(3, "l")
    request = deliver(np.array([1, -2, 2**31 - 1], ">i4").tobytes(), [out, LONG])
    assert request.complete and request.error == 0
    assert out.tolist() == [1, -2, 2**31 - 1] and request.count == 24


def test_a_message_longer_than_the_buffer_is_truncated_after_conversion():
    out = np.zeros(2, "i")
    request = deliver(np.array([7, 8, 9], ">i4").tobytes(), [out, INT])
    assert request.error == ERR_TRUNCATE and out.tolist() == [7, 8] and request.count == 8


def test_a_message_ending_inside_an_element_is_a_type_error():
    request = deliver(np.array([7], ">i4").tobytes()[:3], [np.zeros(2, "i"), INT])
    assert request.error == ERR_TYPE and "ends inside an element" in str(request.exception)


def test_a_derived_receive_is_unpacked_after_conversion():
    vector = INT.Create_vector(3, 1, 2).Commit()
    out = np.full(5, -1, "i")
    request = deliver(np.array([4, 5, 6], ">i4").tobytes(), [out, 1, vector])
    assert request.error == 0 and out.tolist() == [4, -1, 5, -1, 6]


def test_untyped_data_and_empty_messages_are_not_converted():
    assert not typed(parse_buffer([bytearray(4), BYTE]))
    assert not typed(parse_buffer(np.zeros(0, "i")))
    assert typed(parse_buffer(np.zeros(1, "i")))


def test_a_simulated_big_endian_sender_converts_what_it_sends():
    archs = PeerArchs(published=LOCAL.with_byteorder("big"), memory=LOCAL)
    wire = wire_stream(parse_buffer(np.array([1, 258], "i")), archs, archs.published)
    assert bytes(wire) == np.array([1, 258], ">i4").tobytes()
