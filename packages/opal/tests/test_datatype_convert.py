"""Converting packed streams between architectures: byte order, sizes, long double formats."""

from __future__ import annotations

import ctypes

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.opal.datatype.arch import EXTERNAL32, Arch, LongDouble
from ompy.opal.datatype.basic import BASICS, Basic
from ompy.opal.datatype.convert import (
    convert,
    convert_description,
    external32_size,
    needs_conversion,
    packed_size,
    whole_elements,
)
from ompy.opal.datatype.description import Description

LOCAL = Arch.local()
OTHER_ORDER = "big" if LOCAL.byteorder == "little" else "little"
SWAPPED = LOCAL.with_byteorder(OTHER_ORDER)
X87 = LOCAL.long_double is LongDouble.X87


CHAR = BASICS["char"]
SCHAR = BASICS["signed char"]
SHORT = BASICS["short"]
INT = BASICS["int"]
LONG = BASICS["long"]
ULONG = BASICS["unsigned long"]
LLONG = BASICS["long long"]
FLOAT = BASICS["float"]
DOUBLE = BASICS["double"]
LDOUBLE = BASICS["long double"]
BOOL = BASICS["bool"]
WCHAR = BASICS["wchar_t"]
CFLOAT = BASICS["float _Complex"]
CDOUBLE = BASICS["double _Complex"]
CLDOUBLE = BASICS["long double _Complex"]
INT16 = BASICS["int16_t"]
UINT64 = BASICS["uint64_t"]
HALF = BASICS["float16"]
BYTE = BASICS["byte"]
AINT = BASICS["aint"]
LOGICAL = BASICS["LOGICAL"]

ALL = [
    CHAR,
    SCHAR,
    SHORT,
    INT,
    LONG,
    ULONG,
    LLONG,
    FLOAT,
    DOUBLE,
    LDOUBLE,
    BOOL,
    WCHAR,
    CFLOAT,
    CDOUBLE,
    CLDOUBLE,
    INT16,
    UINT64,
    HALF,
    BYTE,
    AINT,
    LOGICAL,
]


def _as_dtype(elem: Basic, arch: Arch) -> np.dtype:
    """numpy's dtype of ``elem`` in ``arch`` (for the types numpy can express there)."""
    size = arch.size_of(elem)
    letter = {"signed": "i", "unsigned": "u", "float": "f", "complex": "c", "bool": "u"}
    if elem.kind in letter:
        return np.dtype(f"{arch.order_char}{letter[elem.kind]}{size}")
    if elem is WCHAR:
        return np.dtype(f"{arch.order_char}u{size}")
    return np.dtype(f"u{size}")


def _stream(parts: list[tuple[Basic, np.ndarray]]) -> tuple[bytes, list[tuple[Basic, int]]]:
    """A packed stream of local elements and its signature."""
    return b"".join(a.tobytes() for _, a in parts), [(e, len(a)) for e, a in parts]


def test_doubles_to_external32_are_big_endian_ieee() -> None:
    values = np.array([1.5, -2.25, 1e300, np.inf])
    out = convert(values.tobytes(), [(DOUBLE, 4)], LOCAL, EXTERNAL32)
    assert bytes(out) == values.astype(">f8").tobytes()
    back = convert(out, [(DOUBLE, 4)], EXTERNAL32, LOCAL)
    assert np.array_equal(np.frombuffer(back, "d"), values)


def test_nothing_to_convert_gives_the_data_back() -> None:
    data = bytearray(np.arange(4, dtype="i").tobytes())
    assert convert(data, [(INT, 4)], LOCAL, LOCAL).obj is data
    assert not needs_conversion([(INT, 4)], LOCAL, LOCAL)
    assert not needs_conversion([(CHAR, 9), (BYTE, 3)], LOCAL, SWAPPED)
    assert convert(data, [(BYTE, 16)], LOCAL, EXTERNAL32).obj is data
    assert needs_conversion([(CHAR, 1), (INT, 1)], LOCAL, SWAPPED)


@pytest.mark.skipif(LOCAL.c_long != 8, reason="needs an 8-byte long")
def test_long_narrows_to_four_bytes_with_a_range_check() -> None:
    values = np.array([0, -1, 2**31 - 1, -(2**31)], dtype="l")
    out = convert(values.tobytes(), [(LONG, 4)], LOCAL, EXTERNAL32)
    assert bytes(out) == values.astype(">i4").tobytes()
    assert np.array_equal(np.frombuffer(convert(out, [(LONG, 4)], EXTERNAL32, LOCAL), "l"), values)
    with pytest.raises(ValueError, match=r"long value 2147483648 does not fit in the 4-byte"):
        convert(np.array([2**31], "l").tobytes(), [(LONG, 1)], LOCAL, EXTERNAL32)
    with pytest.raises(ValueError, match=r"unsigned long value 4294967296"):
        convert(np.array([2**32], "L").tobytes(), [(ULONG, 1)], LOCAL, EXTERNAL32)


@pytest.mark.skipif(LOCAL.c_wchar != 4, reason="needs a 4-byte wchar_t")
def test_wide_characters_become_two_bytes() -> None:
    text = np.array(list("héllo€"), dtype="U1")
    out = convert(text.tobytes(), [(WCHAR, 6)], LOCAL, EXTERNAL32)
    assert bytes(out) == "héllo€".encode("utf-16-be")
    assert np.array_equal(np.frombuffer(convert(out, [(WCHAR, 6)], EXTERNAL32, LOCAL), "U1"), text)
    with pytest.raises(ValueError, match="wchar_t value 128512 does not fit"):
        convert(np.array(["😀"], "U1").tobytes(), [(WCHAR, 1)], LOCAL, EXTERNAL32)


def test_booleans_of_another_size_are_zero_or_one() -> None:
    wide = attrs.evolve(LOCAL, c_bool=4)
    data = np.array([0, 1, 256, 0x01000000], dtype=f"{LOCAL.order_char}u4").tobytes()
    out = convert(data, [(BOOL, 4)], wide, LOCAL)
    assert bytes(out) == bytes([0, 1, 1, 1])
    assert bytes(convert(out, [(BOOL, 4)], LOCAL, wide.with_byteorder("big"))) == (
        np.array([0, 1, 1, 1], ">u4").tobytes()
    )


def test_floats_change_size_and_overflow_is_an_error() -> None:
    narrow = attrs.evolve(LOCAL, c_double=4)
    values = np.array([0.5, -3.0, 1e30])
    out = convert(values.tobytes(), [(DOUBLE, 3)], LOCAL, narrow)
    assert np.array_equal(np.frombuffer(out, "f"), values.astype("f"))
    with pytest.raises(ValueError, match=r"double value 1e\+300 does not fit"):
        convert(np.array([1e300]).tobytes(), [(DOUBLE, 1)], LOCAL, narrow)
    complex_values = np.array([1 + 2j, -0.5j])
    out = convert(complex_values.tobytes(), [(CDOUBLE, 2)], LOCAL, narrow.with_byteorder("big"))
    assert bytes(out) == complex_values.astype(">c8").tobytes()


def test_complex_swaps_each_half() -> None:
    values = np.array([1 + 2j, 3 - 4j], dtype="F")
    out = convert(values.tobytes(), [(CFLOAT, 2)], LOCAL, EXTERNAL32)
    assert bytes(out) == values.astype(">c8").tobytes()


@pytest.mark.skipif(not X87, reason="x87 long double only")
def test_x87_long_double_to_binary128_known_bits() -> None:
    values = np.array([1.0, -2.5, 0.0, np.inf], dtype=np.longdouble)
    out = bytes(convert(values.tobytes(), [(LDOUBLE, 4)], LOCAL, EXTERNAL32))
    words = [out[i : i + 16].hex() for i in range(0, 64, 16)]
    assert words == [
        "3fff" + "0" * 28,
        "c0004" + "0" * 27,
        "0" * 32,
        "7fff" + "0" * 28,
    ]


@pytest.mark.skipif(not X87, reason="x87 long double only")
def test_x87_long_double_round_trips_through_binary128_exactly() -> None:
    rng = np.random.default_rng(7)
    values = rng.standard_normal(200).astype(np.longdouble) * np.longdouble(3) ** rng.integers(
        -2000, 2000, 200
    )
    tiny = np.finfo(np.longdouble).smallest_subnormal
    specials = np.array([tiny, -tiny * 5, np.finfo(np.longdouble).max, -np.inf, 1 / 3])
    values = np.concatenate([values, specials.astype(np.longdouble)])
    data = values.tobytes()
    for target in (EXTERNAL32, attrs.evolve(EXTERNAL32, byteorder="little")):
        there = convert(data, [(LDOUBLE, len(values))], LOCAL, target)
        back = np.frombuffer(convert(there, [(LDOUBLE, len(values))], target, LOCAL), "g")
        assert np.array_equal(back, values)
    nan = convert(np.array([np.nan], "g").tobytes(), [(LDOUBLE, 1)], LOCAL, EXTERNAL32)
    assert np.isnan(np.frombuffer(convert(nan, [(LDOUBLE, 1)], EXTERNAL32, LOCAL), "g")[0])


def _binary128(sign: int, exponent: int, fraction: int) -> bytes:
    return ((sign << 127) | (exponent << 112) | fraction).to_bytes(16, "big")


@pytest.mark.skipif(not X87, reason="x87 long double only")
def test_binary128_rounds_to_nearest_even_and_overflow_is_an_error() -> None:
    one = 16383
    half_ulp = 1 << 48  # x87 keeps the top 63 of the 112 fraction bits
    ulp = np.longdouble(2) ** -63
    cases = [
        (_binary128(0, one, half_ulp), np.longdouble(1)),  # a tie rounds to the even 1.0
        (_binary128(0, one, 3 * half_ulp), 1 + 2 * ulp),  # a tie rounds up to even
        (_binary128(0, one, half_ulp + 1), 1 + ulp),  # above the tie rounds up
        (_binary128(1, one + 1, (1 << 112) - 1), np.longdouble(-4)),  # carry into the exponent
    ]
    for record, expected in cases:
        value = np.frombuffer(convert(record, [(LDOUBLE, 1)], EXTERNAL32, LOCAL), "g")[0]
        assert value == expected
    biggest = _binary128(0, 0x7FFE, (1 << 112) - 1)
    with pytest.raises(ValueError, match=r"long double value .* too large"):
        convert(biggest, [(LDOUBLE, 1)], EXTERNAL32, LOCAL)


def test_long_double_between_other_formats_is_an_error_naming_the_type() -> None:
    plain = attrs.evolve(LOCAL, long_double=LongDouble.BINARY64, c_longdouble=8)
    other = attrs.evolve(LOCAL, long_double=LongDouble.DOUBLE_DOUBLE)
    data = bytes(plain.size_of(LDOUBLE) * 2)
    with pytest.raises(ValueError, match="'long double'"):
        convert(data, [(LDOUBLE, 2)], plain, EXTERNAL32)
    with pytest.raises(ValueError, match="'long double _Complex'"):
        convert(bytes(other.size_of(CLDOUBLE)), [(CLDOUBLE, 1)], other, EXTERNAL32)


def test_the_length_of_the_data_is_checked() -> None:
    with pytest.raises(ValueError, match="holds 7 bytes, but the signature takes 8"):
        convert(bytes(7), [(INT, 2)], LOCAL, SWAPPED)
    with pytest.raises(ValueError, match="negative count"):
        convert(bytes(0), [(INT, -1)], LOCAL, SWAPPED)


def test_sizes() -> None:
    signature = [(CHAR, 3), (LONG, 2), (LDOUBLE, 1), (WCHAR, 2), (CDOUBLE, 1)]
    assert external32_size(signature) == 3 + 2 * 4 + 16 + 2 * 2 + 16
    assert packed_size(signature, LOCAL) == (
        3 + 2 * LOCAL.c_long + LOCAL.c_longdouble + 2 * LOCAL.c_wchar + 16
    )


def test_whole_elements_of_a_short_stream() -> None:
    signature = [(INT, 2), (DOUBLE, 3)]
    assert whole_elements(signature, LOCAL, 0) == ([], 0)
    assert whole_elements(signature, LOCAL, 6) == ([(INT, 1)], 2)
    assert whole_elements(signature, LOCAL, 16) == ([(INT, 2), (DOUBLE, 1)], 0)
    assert whole_elements(signature, LOCAL, 32) == ([(INT, 2), (DOUBLE, 3)], 0)
    with pytest.raises(ValueError, match="more than the signature holds"):
        whole_elements(signature, LOCAL, 33)


def test_many_runs_are_gathered_like_few() -> None:
    rng = np.random.default_rng(3)
    parts = []
    for i in range(60):
        elem = [INT, DOUBLE, SHORT][i % 3]
        parts.append((elem, rng.integers(-100, 100, i % 5).astype(elem.dtype)))
    data, signature = _stream(parts)
    out = bytes(convert(data, signature, LOCAL, EXTERNAL32))
    expected = b"".join(a.astype(_as_dtype(e, EXTERNAL32)).tobytes() for e, a in parts)
    assert out == expected
    assert bytes(convert(out, signature, EXTERNAL32, LOCAL)) == data


# -- round trips ------------------------------------------------------------------------------

FITS_EXTERNAL32 = {
    "long": (-(2**31), 2**31 - 1),
    "unsigned long": (0, 2**32 - 1),
}


def _values(elem: Basic, count: int, data: st.DataObject) -> np.ndarray:
    dtype = elem.dtype
    if elem.kind in ("signed", "unsigned"):
        info = np.iinfo(dtype)
        low, high = FITS_EXTERNAL32.get(elem.name, (int(info.min), int(info.max)))
        ints = data.draw(st.lists(st.integers(low, high), min_size=count, max_size=count))
        return np.array(ints, dtype=dtype)
    if elem.kind in ("float", "complex"):
        width = 16 if elem.size // (2 if elem.kind == "complex" else 1) == 2 else 32
        floats = data.draw(
            st.lists(
                st.floats(width=width, allow_nan=False), min_size=count * 2, max_size=count * 2
            )
        )
        pairs = np.array(floats, dtype="f8")
        if elem.kind == "complex":
            values = np.empty(count, dtype)
            values.real, values.imag = pairs[0::2], pairs[1::2]
        else:
            values = pairs[:count].astype(dtype)
        if "long double" in elem.name and X87:
            # numpy leaves the 6 padding bytes of each x87 value as they were: not data.
            values.view(np.uint8).reshape(-1, LOCAL.c_longdouble)[:, 10:] = 0
        return values
    if elem.kind == "bool":
        return np.array(data.draw(st.lists(st.booleans(), min_size=count, max_size=count)), dtype)
    if elem is WCHAR:
        chars = st.characters(max_codepoint=0xFFFF, exclude_categories=["Cs"])
        return np.array(data.draw(st.lists(chars, min_size=count, max_size=count)), "U1")
    raw = data.draw(st.binary(min_size=count * elem.size, max_size=count * elem.size))
    return np.frombuffer(raw, dtype=dtype)


runs = st.lists(st.tuples(st.sampled_from(ALL), st.integers(0, 6)), max_size=25)


@settings(max_examples=60, deadline=None)
@given(layout=runs, data=st.data())
def test_round_trip_through_external32(
    layout: list[tuple[Basic, int]], data: st.DataObject
) -> None:
    parts = [(elem, _values(elem, count, data)) for elem, count in layout]
    stream, signature = _stream(parts)
    if any(e.name in ("long double", "long double _Complex") for e, _ in signature) and not X87:
        return  # only x87 <-> binary128 converts
    there = convert(stream, signature, LOCAL, EXTERNAL32)
    assert len(there) == external32_size(signature)
    back = convert(there, signature, EXTERNAL32, LOCAL)
    assert bytes(back) == stream


@settings(max_examples=60, deadline=None)
@given(layout=runs, data=st.data())
def test_round_trip_through_the_other_byte_order(
    layout: list[tuple[Basic, int]], data: st.DataObject
) -> None:
    parts = [(elem, _values(elem, count, data)) for elem, count in layout]
    stream, signature = _stream(parts)
    there = bytes(convert(stream, signature, LOCAL, SWAPPED))
    assert len(there) == len(stream)
    # By definition, the other byte order reverses the bytes of every scalar component.
    expected = []
    for elem, values in parts:
        component = elem.size // (2 if elem.kind == "complex" else 1)
        expected.append(values.view(np.uint8).reshape(-1, component)[:, ::-1].tobytes())
    assert there == b"".join(expected)
    assert bytes(convert(there, signature, SWAPPED, LOCAL)) == stream


def test_ctypes_agrees_with_the_swapped_layout() -> None:
    value = ctypes.c_int(0x01020304)
    swapped = convert(bytes(value), [(INT, 1)], LOCAL, SWAPPED)
    assert bytes(swapped) == bytes(value)[::-1]


def test_every_basic_has_a_size_in_every_architecture() -> None:
    for basic in BASICS.values():
        assert LOCAL.size_of(basic) == basic.size
        assert EXTERNAL32.size_of(basic) >= 1


def test_a_description_converts_without_a_python_signature() -> None:
    pair = Description.struct(
        [1, 2], [0, 8], [Description.of_basic(DOUBLE), Description.of_basic(INT)]
    )
    count = 1000
    rng = np.random.default_rng(5)
    record = np.dtype([("x", "f8"), ("i", "i4", 2)])
    values = np.zeros(count, record)
    values["x"] = rng.standard_normal(count)
    values["i"] = rng.integers(-(2**31), 2**31, (count, 2))
    packed = values.tobytes()
    there = convert_description(packed, pair, count, LOCAL, EXTERNAL32)
    assert bytes(there) == bytes(convert(packed, pair.signature(count), LOCAL, EXTERNAL32))
    big = values.astype(np.dtype([("x", ">f8"), ("i", ">i4", 2)]))
    assert bytes(there) == big.tobytes()
    assert bytes(convert_description(there, pair, count, EXTERNAL32, LOCAL)) == packed


def test_a_repeated_element_converts_like_its_flat_signature() -> None:
    # double, int, double: the last run of one element merges with the first of the next in
    # the flat signature, but not in the table of rows.
    parts = [Description.of_basic(b) for b in (DOUBLE, SHORT, DOUBLE)]
    element = Description.struct([1, 3, 2], [0, 8, 16], parts)
    count = 37
    rng = np.random.default_rng(11)
    record = np.dtype([("a", "f8"), ("s", "i2", 3), ("b", "f8", 2)])
    values = np.zeros(count, record)
    values["a"] = rng.standard_normal(count)
    values["s"] = rng.integers(-(2**15), 2**15, (count, 3))
    values["b"] = rng.standard_normal((count, 2))
    packed = values.tobytes()
    for target in (EXTERNAL32, SWAPPED):
        there = bytes(convert_description(packed, element, count, LOCAL, target))
        assert there == bytes(convert(packed, element.signature(count), LOCAL, target))
        assert bytes(convert_description(there, element, count, target, LOCAL)) == packed
    with pytest.raises(ValueError, match="holds 10 bytes, but 37 elements take 1110 bytes"):
        convert_description(bytes(10), element, count, LOCAL, EXTERNAL32)


def test_convertor_then_convert_is_pack_external() -> None:
    # What Pack_external / Unpack_external and a heterogeneous receive do: pack the layout with
    # the convertor, convert the packed stream, and the reverse on the way back.
    from ompy.opal.datatype.convertor import Convertor

    column = Description.of_basic(LONG).hvector(5, 1, 3 * LONG.size)
    matrix = np.arange(15, dtype="l").reshape(5, 3) - 7
    packed = Convertor(column, memoryview(matrix).cast("B"), LONG.size, 1).pack_all()
    external = convert_description(packed, column, 1, LOCAL, EXTERNAL32)
    assert bytes(external) == matrix[:, 1].astype(">i4").tobytes()
    result = np.zeros_like(matrix)
    native = convert_description(external, column, 1, EXTERNAL32, LOCAL)
    Convertor(column, memoryview(result).cast("B"), LONG.size, 1).unpack_all(native)
    assert np.array_equal(result[:, 1], matrix[:, 1]) and not result[:, [0, 2]].any()
