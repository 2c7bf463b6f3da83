"""Predefined datatypes: sizes, extents, names, handle semantics and codes."""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.constants import UNDEFINED
from ompy.ompi.datatype import BY_KEY, DATATYPE_NULL, Datatype, from_code
from ompy.ompi.datatype import predefined as mpi

C_SIZES = {
    "CHAR": 1,
    "SIGNED_CHAR": 1,
    "SHORT": 2,
    "INT": 4,
    "LONG_LONG": 8,
    "FLOAT": 4,
    "DOUBLE": 8,
    "C_BOOL": 1,
    "INT8_T": 1,
    "INT16_T": 2,
    "INT32_T": 4,
    "INT64_T": 8,
    "UINT8_T": 1,
    "UINT16_T": 2,
    "UINT32_T": 4,
    "UINT64_T": 8,
    "C_FLOAT_COMPLEX": 8,
    "C_DOUBLE_COMPLEX": 16,
    "BYTE": 1,
    "PACKED": 1,
    "BOOL": 1,
}


@pytest.mark.parametrize(("key", "size"), sorted(C_SIZES.items()))
def test_basic_types_have_their_c_sizes(key, size):
    datatype = BY_KEY[key]
    assert datatype.Get_size() == datatype.size == size
    assert datatype.Get_extent() == (0, size)
    assert datatype.lb == 0 and datatype.ub == datatype.extent == size


def test_long_follows_the_platform():
    assert mpi.LONG.size == np.dtype("l").itemsize
    assert mpi.UNSIGNED_LONG.size == np.dtype("L").itemsize


@pytest.mark.parametrize(
    ("pair", "size", "extent"),
    [
        (mpi.FLOAT_INT, 8, 8),
        (mpi.DOUBLE_INT, 12, 16),
        (mpi.TWOINT, 8, 8),
        (mpi.SHORT_INT, 6, 8),
        (mpi.LONG_INT, np.dtype("l").itemsize + 4, 16),
    ],
)
def test_pair_types_have_size_of_data_and_extent_of_the_c_struct(pair, size, extent):
    assert pair.Get_size() == size
    assert pair.Get_extent() == (0, extent)
    assert pair.dtype.names == ("value", "index")
    assert pair.dtype.itemsize == extent


def test_names_are_the_mpi_names():
    assert mpi.DOUBLE.Get_name() == "MPI_DOUBLE"
    assert mpi.TWOINT.name == "MPI_2INT"
    assert mpi.BOOL.Get_name() == "MPI_C_BOOL"  # mpi4py 4.1: BOOL is C_BOOL
    assert mpi.INT_INT is mpi.TWOINT
    assert mpi.C_COMPLEX is mpi.C_FLOAT_COMPLEX


def test_handles_compare_by_the_datatype_they_refer_to():
    copy = Datatype(mpi.INT)
    assert copy == mpi.INT and copy is not mpi.INT
    assert hash(copy) == hash(mpi.INT)
    assert mpi.INT != mpi.INT32_T  # same layout, different datatype
    assert mpi.INT
    assert not DATATYPE_NULL
    assert Datatype() == DATATYPE_NULL


def test_commit_returns_the_datatype():
    assert mpi.DOUBLE.Commit() is mpi.DOUBLE


def test_dup_is_a_new_named_copy_that_can_be_freed():
    dup = mpi.DOUBLE.Dup()
    assert dup != mpi.DOUBLE
    assert dup.Get_size() == 8
    assert dup.Get_name() == "Dup MPI_DOUBLE"
    assert not dup.is_predefined
    other_handle = Datatype(dup)
    dup.Set_name("mine")
    assert other_handle.name == "mine"
    dup.Free()
    assert dup == DATATYPE_NULL
    assert mpi.DOUBLE.Get_size() == 8


def test_freeing_a_predefined_datatype_is_an_error():
    with pytest.raises(errors.Exception) as info:
        mpi.INT.Free()
    assert info.value.Get_error_class() == errors.ERR_TYPE
    assert "MPI_INT" in str(info.value)
    assert mpi.INT.Get_size() == 4


def test_the_null_datatype_refuses_every_query_but_its_name():
    assert DATATYPE_NULL.Get_name() == "MPI_DATATYPE_NULL"
    for query in (DATATYPE_NULL.Get_size, DATATYPE_NULL.Get_extent, DATATYPE_NULL.Commit):
        with pytest.raises(errors.Exception) as info:
            query()
        assert info.value.Get_error_class() == errors.ERR_TYPE


def test_codes_map_to_datatypes_and_back():
    assert from_code("d") is mpi.DOUBLE
    assert Datatype.fromcode("i") is mpi.INT
    assert from_code("i4") is mpi.INT32_T
    assert from_code("<f8") is mpi.DOUBLE
    assert from_code("c16") is mpi.C_DOUBLE_COMPLEX
    assert from_code("b1") is mpi.C_BOOL
    assert mpi.DOUBLE.tocode() == "d" and mpi.DOUBLE.typechar == "d"
    assert mpi.INT32_T.typestr == "i4" and mpi.INT32_T.tocode() == "i4"
    with pytest.raises(ValueError, match="cannot map code 'x'"):
        from_code("x")
    with pytest.raises(ValueError, match="cannot map code '>f8'"):
        from_code(">f8")  # not this machine's byte order
    with pytest.raises(ValueError, match="cannot map MPI_DOUBLE_INT"):
        mpi.DOUBLE_INT.tocode()


def test_predefined_datatypes_pickle_to_themselves():
    for datatype in (mpi.DOUBLE, mpi.TWOINT, mpi.INT_INT, DATATYPE_NULL):
        assert pickle.loads(pickle.dumps(datatype)) is datatype
    dup = mpi.INT.Dup().Dup()  # travels as the calls that made it (mpi4py's form)
    back = pickle.loads(pickle.dumps(dup))
    assert back not in (dup, mpi.INT)
    assert (back.Get_size(), back.Get_extent(), back.typechar) == (4, (0, 4), "i")
    assert not back.is_predefined and back.Get_name() == "Dup Dup MPI_INT"


@given(st.integers(0, 10_000))
def test_count_of_whole_elements(nbytes):
    expected = nbytes // 8 if nbytes % 8 == 0 else UNDEFINED
    assert mpi.DOUBLE.count_of(nbytes) == expected


def test_elements_count_the_basic_parts_of_pairs():
    assert mpi.DOUBLE_INT.elements_of(24) == 4  # two whole pairs
    assert mpi.DOUBLE_INT.elements_of(20) == 3  # two pairs and a double
    assert mpi.DOUBLE_INT.elements_of(14) == UNDEFINED
    assert mpi.DOUBLE_INT.count_of(20) == UNDEFINED
