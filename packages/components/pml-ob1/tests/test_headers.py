"""ob1 wire headers: fixed layouts in network byte order that round-trip every valid value."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.mca.pml.ob1 import headers
from ompy.mca.pml.ob1.headers import (
    ACK,
    CANCEL,
    CANCELED,
    FIN,
    FRAG,
    HEADERS,
    MATCH,
    PUT,
    RGET,
    RNDV,
)

U8 = st.integers(0, 2**8 - 1)
U16 = st.integers(0, 2**16 - 1)
U32 = st.integers(0, 2**32 - 1)
U64 = st.integers(0, 2**64 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)

MATCH_PART = (U8, U16, U32, I32, I32)  # flags, seq, ctx, src, tag
FIELDS = {
    MATCH: MATCH_PART,
    RNDV: (*MATCH_PART, U64, U64),
    RGET: (*MATCH_PART, U64, U64, U64, U64),
    ACK: (U8, U64, U64, U64, U64),
    FRAG: (U8, U64, U64, U64),
    PUT: (U8, U64, U64, U64, U64, U64),
    FIN: (U8, I32, U64, U64),
    CANCEL: (U8, U32, I32, U16, U64, U64),  # flags, ctx, src, seq, src_req, token
    CANCELED: (U8, U64),
}


@st.composite
def header_and_values(draw):
    header = draw(st.sampled_from(sorted(FIELDS, key=lambda h: h.type)))
    values = tuple(draw(strategy) for strategy in FIELDS[header])
    return header, values


@given(header_and_values(), st.integers(0, 64))
def test_every_header_round_trips_at_any_offset(header_values, offset):
    header, values = header_values
    buffer = bytearray(offset + header.size + 8)
    header.pack_into(buffer, offset, *values)
    assert header.unpack_from(buffer, offset) == (header.type, *values)
    assert headers.header_of(buffer, offset) is header
    assert header.pack(*values) == bytes(buffer[offset : offset + header.size])
    decoded_header, fields = headers.decode(buffer, offset)
    assert decoded_header is header
    assert tuple(fields.values()) == (header.type, *values)


def test_layouts_have_fixed_sizes_that_keep_payloads_aligned():
    sizes = {h.name: h.size for h in HEADERS.values()}
    assert sizes == {
        "MATCH": 16,
        "RNDV": 32,
        "RGET": 48,
        "ACK": 40,
        "FRAG": 32,
        "PUT": 48,
        "FIN": 24,
        "CANCEL": 32,
        "CANCELD": 16,
    }
    for header in HEADERS.values():
        assert header.struct.format.startswith("!")
        assert len(header.fields) == len(header.unpack_from(bytes(header.size)))


def test_the_match_header_is_in_network_byte_order():
    wire = MATCH.pack(headers.FLAG_ACK, 0x0102, 0x03040506, 7, -2)
    assert wire == bytes.fromhex("41 01 0102 03040506 00000007 fffffffe")


def test_rendezvous_headers_extend_the_match_part():
    values = (0, 5, 9, 1, 42)
    rndv = RNDV.pack(*values, 1 << 40, 77)
    assert MATCH.unpack_from(rndv)[1:] == values
    assert RNDV.as_dict(RNDV.unpack_from(rndv))["msg_length"] == 1 << 40


def test_types_are_open_mpi_values_and_distinct():
    assert MATCH.type == 0x41 and FIN.type == 0x49
    assert (CANCEL.type, CANCELED.type) == (0x4A, 0x4B)  # ompy's own, after Open MPI's
    assert len(HEADERS) == 9


@pytest.mark.parametrize(
    ("header", "values", "match"),
    [
        (MATCH, (0, 2**16, 1, 0, 0), r"field seq must be an int in 0\.\.65535, got 65536"),
        (MATCH, (0, 0, 1, 0, 2**31), "field tag"),
        (MATCH, (0, 0, -1, 0, 0), "field ctx"),
        (FRAG, (0, -1, 0, 0), "field frag_offset"),
        (FIN, (0, 0, 0), r"takes 4 values \(flags, status, frag, size\), got 3"),
    ],
)
def test_out_of_range_values_name_the_field(header, values, match):
    with pytest.raises(ValueError, match=match):
        header.pack(*values)
    with pytest.raises(ValueError, match=match):
        header.pack_into(bytearray(64), 0, *values)


def test_unknown_or_truncated_headers_are_reported():
    with pytest.raises(ValueError, match="unknown ob1 header type 0x07"):
        headers.header_of(b"\x07rest")
    with pytest.raises(ValueError, match="too short"):
        headers.header_of(b"", 0)
    with pytest.raises(ValueError, match="truncated RNDV header"):
        headers.decode(RNDV.pack(0, 0, 0, 0, 0, 0, 0)[:20])
