"""``ompy.util.dtlib``: numpy dtypes and MPI datatypes describe the same memory both ways."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.ompi.api.testing import make_world
from ompy.util.dtlib import from_numpy_dtype, to_numpy_dtype

SCALARS = ["b", "h", "i", "l", "q", "B", "H", "I", "L", "Q", "f", "d", "g", "F", "D", "?", "e"]


@st.composite
def dtypes(draw, depth=2):
    """Scalar dtypes, sub-arrays of them, and records of those (aligned or packed)."""
    scalar = st.sampled_from(SCALARS).map(np.dtype)
    if depth == 0:
        return draw(scalar)
    kind = draw(st.sampled_from(["scalar", "subarray", "record"]))
    if kind == "scalar":
        return draw(scalar)
    if kind == "subarray":
        shape = tuple(draw(st.lists(st.integers(1, 3), min_size=1, max_size=3)))
        return np.dtype((draw(dtypes(depth - 1)), shape))
    fields = draw(st.lists(dtypes(depth - 1), min_size=1, max_size=4))
    return np.dtype([(f"f{i}", f) for i, f in enumerate(fields)], align=draw(st.booleans()))


@settings(max_examples=150, deadline=None)
@given(dtypes())
def test_a_dtype_and_its_datatype_round_trip_with_the_same_layout(dtype):
    datatype = from_numpy_dtype(dtype)
    try:
        assert datatype.extent == dtype.itemsize
        assert datatype.size == sum(
            np.dtype(code).itemsize * count for code, count in _leaves(dtype)
        )
        again = to_numpy_dtype(datatype)
        assert again.itemsize == dtype.itemsize
        back = from_numpy_dtype(again)
        assert to_numpy_dtype(back) == again
        back.Free()
        # the same bytes travel: pack with the datatype, compare with numpy's own view
        data = np.frombuffer(np.random.default_rng(0).bytes(dtype.itemsize * 3), dtype=np.uint8)
        (comm,) = make_world(1)  # independent of the state of this interpreter's own MPI
        packed = bytearray(datatype.Pack_size(3, comm))
        datatype.Commit()
        datatype.Pack(data, packed, 0, comm)
        assert bytes(packed) == _packed_by_numpy(data, dtype, 3)
    finally:
        datatype.Free()


def _leaves(dtype):
    if dtype.fields:
        return [leaf for name in dtype.names for leaf in _leaves(dtype.fields[name][0])]
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        return [(code, count * int(np.prod(shape))) for code, count in _leaves(base)]
    return [(dtype.str, 1)]


def _packed_by_numpy(data, dtype, count):
    """The data bytes of ``count`` elements, field by field in order, padding skipped."""
    out = bytearray()
    for i in range(count):
        out += _element_bytes(data[i * dtype.itemsize : (i + 1) * dtype.itemsize], dtype)
    return bytes(out)


def _element_bytes(raw, dtype):
    if dtype.fields:
        parts = bytearray()
        for name in dtype.names:
            field, offset = dtype.fields[name][:2]
            parts += _element_bytes(raw[offset : offset + field.itemsize], field)
        return bytes(parts)
    if dtype.subdtype is not None:
        base, shape = dtype.subdtype
        n = int(np.prod(shape))
        return b"".join(
            _element_bytes(raw[k * base.itemsize : (k + 1) * base.itemsize], base) for k in range(n)
        )
    return bytes(raw)


def test_predefined_and_derived_datatypes_have_numpy_forms():
    assert to_numpy_dtype(MPI.DOUBLE) == np.float64
    assert to_numpy_dtype(MPI.DOUBLE_INT) == np.dtype("d,i", align=True)
    assert to_numpy_dtype(MPI.INT.Create_contiguous(3)) == np.dtype(("i", (3,)))
    vector = to_numpy_dtype(MPI.DOUBLE.Create_vector(2, 1, 3))
    assert vector.fields["f1"][1] == 24 and vector.itemsize == 32
    indexed = to_numpy_dtype(MPI.INT.Create_indexed([2, 1], [0, 4]))
    assert [indexed.fields[n][1] for n in indexed.names] == [0, 16]
    whole = MPI.DOUBLE.Create_subarray([2, 3], [2, 3], [0, 0], order=MPI.ORDER_FORTRAN)
    assert to_numpy_dtype(whole) == np.dtype(("d", (3, 2)))
    record = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.DOUBLE, MPI.CHAR])
    assert to_numpy_dtype(record) == np.dtype("d,S1", align=True)


def test_what_has_no_counterpart_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="null MPI datatype"):
        to_numpy_dtype(MPI.DATATYPE_NULL)
    with pytest.raises(ValueError, match="selects"):
        to_numpy_dtype(MPI.DOUBLE.Create_subarray([4], [2], [1]))
    with pytest.raises(ValueError, match="object entries"):
        from_numpy_dtype(np.dtype(object))
    with pytest.raises(ValueError, match="non-native byte order"):
        from_numpy_dtype(np.dtype(">f8" if np.little_endian else "<f8"))
