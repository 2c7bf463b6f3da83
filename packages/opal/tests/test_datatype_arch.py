"""Architectures: what this machine is, external32's table, the modex record, peers' views."""

from __future__ import annotations

import ctypes
import sys

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.opal.datatype.arch import (
    BYTEORDER_PARAM,
    EXTERNAL32,
    MODEX_KEY,
    SIZE_FIELDS,
    VARIABLE_TYPES,
    Arch,
    LongDouble,
    PeerArchs,
    is_fixed,
    presented,
    presenting_ranks,
)
from ompy.opal.datatype.basic import BASICS
from ompy.opal.mca.params import ParamValueError, Registry
from ompy.opal.modex import InMemoryModex, ModexError


@attrs.frozen
class Elem:
    """An element type as the architecture sees it (name, kind, size on this machine)."""

    name: str
    kind: str
    size: int


def test_local_is_measured_from_this_machine() -> None:
    local = Arch.local()
    assert local.byteorder == sys.byteorder
    assert local.c_long == ctypes.sizeof(ctypes.c_long)
    assert local.c_wchar == ctypes.sizeof(ctypes.c_wchar)
    assert local.aint == ctypes.sizeof(ctypes.c_void_p)
    assert local.c_longdouble == np.dtype(np.longdouble).itemsize
    mantissa = {LongDouble.X87: 63, LongDouble.BINARY128: 112, LongDouble.BINARY64: 52}
    assert np.finfo(np.longdouble).nmant == mantissa[local.long_double]
    assert Arch.local() is local  # measured once


def test_local_sizes_are_the_basics_sizes() -> None:
    # What this process packs is what its architecture says it packs, for every basic.
    local = Arch.local()
    for basic in BASICS.values():
        assert local.size_of(basic) == basic.size, basic


def test_external32_is_the_mpi_standard_table() -> None:
    # MPI 4.1, 14.5.2: big-endian, long 4, long double 16 (binary128), wchar 2, bool 1.
    expected = {
        "c_short": 2,
        "c_int": 4,
        "c_long": 4,
        "c_longlong": 8,
        "c_float": 4,
        "c_double": 8,
        "c_longdouble": 16,
        "c_bool": 1,
        "c_wchar": 2,
        "aint": 8,
        "offset": 8,
        "count": 8,
        "f_integer": 4,
        "f_real": 4,
        "f_double_precision": 8,
        "f_logical": 4,
    }
    assert {name: getattr(EXTERNAL32, name) for name in SIZE_FIELDS} == expected
    assert EXTERNAL32.byteorder == "big"
    assert EXTERNAL32.long_double is LongDouble.BINARY128
    assert EXTERNAL32.size_of(Elem("long double _Complex", "complex", 32)) == 32
    assert EXTERNAL32.size_of(Elem("unsigned long", "unsigned", 8)) == 4


def test_fixed_size_names_keep_their_size_everywhere() -> None:
    for name, size in [("int8_t", 1), ("uint64_t", 8), ("float16", 2), ("byte", 1)]:
        assert is_fixed(name)
        assert EXTERNAL32.size_of(Elem(name, "signed", size)) == size
    assert is_fixed("integer4") and is_fixed("REAL*8") and is_fixed("complex16")
    assert not is_fixed("long") and not is_fixed("wchar_t")


def test_an_unknown_element_name_is_an_error() -> None:
    with pytest.raises(ValueError, match="does not know the element type 'quad'"):
        Arch.local().size_of(Elem("quad", "float", 16))


def test_every_variable_type_names_a_field() -> None:
    for field, parts in VARIABLE_TYPES.values():
        assert field in SIZE_FIELDS and parts in (1, 2)


def test_encode_decode_round_trip() -> None:
    local = Arch.local()
    for arch in (local, local.with_byteorder("big"), EXTERNAL32):
        record = arch.encode()
        assert len(record) == 3 + len(SIZE_FIELDS)
        assert Arch.decode(record) == arch
        assert Arch.decode(memoryview(record)) == arch


@given(
    order=st.sampled_from(["little", "big"]),
    fmt=st.sampled_from(list(LongDouble)),
    sizes=st.lists(st.integers(1, 255), min_size=len(SIZE_FIELDS), max_size=len(SIZE_FIELDS)),
)
def test_any_arch_survives_the_record(order: str, fmt: LongDouble, sizes: list[int]) -> None:
    arch = Arch(byteorder=order, long_double=fmt, **dict(zip(SIZE_FIELDS, sizes, strict=True)))
    assert Arch.decode(arch.encode()) == arch


@pytest.mark.parametrize(
    "record",
    [b"", b"\x02" + bytes(18), b"\x01\x07" + bytes(17), b"\x01\x00\x09" + bytes(16), bytes(5)],
)
def test_decode_refuses_what_is_not_a_record(record: bytes) -> None:
    with pytest.raises(ValueError, match="architecture record"):
        Arch.decode(record)


def test_bad_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="byteorder"):
        attrs.evolve(EXTERNAL32, byteorder="middle")
    with pytest.raises(ValueError, match="c_long"):
        attrs.evolve(EXTERNAL32, c_long=0)


def test_the_simulated_arch_differs_only_in_byte_order() -> None:
    local = Arch.local()
    foreign = local.with_byteorder("big" if local.byteorder == "little" else "little")
    assert not foreign.matches(local) and local.matches(Arch.decode(local.encode()))
    assert attrs.evolve(foreign, byteorder=local.byteorder) == local


def test_describe_lists_every_fact() -> None:
    facts = dict(EXTERNAL32.describe())
    assert facts["byte order"] == "big-endian"
    assert facts["long double format"] == "binary128 in 16 bytes"
    assert facts["long double"] == "16"
    assert facts["long"] == "4" and facts["wchar_t"] == "2"


def _registry(**values: str) -> Registry:
    return Registry(environ={f"OMPY_MCA_{k}": v for k, v in values.items()}, files=[])


def test_presented_follows_the_parameter() -> None:
    local = Arch.local()
    assert presented(_registry()) == local
    assert presented(_registry(opal_arch_byteorder="big")) == local.with_byteorder("big")
    assert presented(_registry(opal_arch_byteorder="little")).byteorder == "little"
    with pytest.raises(ParamValueError, match=BYTEORDER_PARAM):
        presented(_registry(opal_arch_byteorder="middle"))


def test_presented_only_by_the_chosen_ranks() -> None:
    local = Arch.local()
    registry = _registry(opal_arch_byteorder="big", opal_arch_byteorder_ranks="2, 4")
    assert [presented(registry, rank).byteorder for rank in range(5)] == [
        local.byteorder,
        local.byteorder,
        "big",
        local.byteorder,
        "big",
    ]
    assert presenting_ranks(registry) == (2, 4)
    for bad in ("two", "-1"):
        registry = _registry(opal_arch_byteorder="big", opal_arch_byteorder_ranks=bad)
        with pytest.raises(ParamValueError, match="opal_arch_byteorder_ranks"):
            presented(registry, 0)


def test_peer_archs_read_the_modex_once() -> None:
    local = Arch.local()
    big = local.with_byteorder("big")
    modexes = InMemoryModex.group(3)
    for rank, modex in enumerate(modexes):
        modex.put(MODEX_KEY, (big if rank == 2 else local).encode())
        modex.commit()
    native = PeerArchs(modexes[0], rank=0)
    simulated = PeerArchs(modexes[2], rank=2, published=big)
    assert [native.of(r) for r in range(3)] == [local, local, big]
    assert native.foreign(1) is None and native.foreign(2) == big
    assert native.outgoing() is None and not native.simulated
    # The simulated rank holds native data: it converts what any peer sends it from that
    # peer's representation, its own messages to itself included, and what it sends.
    assert simulated.simulated and simulated.outgoing() == big
    assert simulated.foreign(0) is None and simulated.foreign(2) == big
    modexes[1]._store[1][MODEX_KEY] = b"junk"  # cached: not read again
    assert native.of(1) == local


def test_peer_archs_report_a_missing_or_bad_record() -> None:
    modexes = InMemoryModex.group(2)
    modexes[1].put(MODEX_KEY, b"\x01\x00")
    modexes[1].commit()
    archs = PeerArchs(modexes[0], rank=0)
    with pytest.raises(ValueError, match="rank 1 published a bad architecture"):
        archs.of(1)
    with pytest.raises(ModexError):
        PeerArchs(InMemoryModex.group(2)[0]).of(1)


def test_without_a_modex_every_peer_is_like_this_process() -> None:
    archs = PeerArchs()
    assert archs.of(5) == Arch.local() and archs.foreign(5) is None
