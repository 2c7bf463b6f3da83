"""Which predefined operation MPI defines on which predefined datatype (MPI 4.1, 6.9.2).

The combinations MPI forbids raise MPI.Exception(ERR_OP) naming the operation and the datatype,
before any op component is consulted, so these tests need none installed.
"""

import re

import numpy as np
import pytest

from ompy.ompi import errors
from ompy.ompi.api.testing import default_instance
from ompy.ompi.datatype import BY_KEY
from ompy.ompi.datatype import predefined as types
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.op import Intrinsic
from ompy.ompi.mca.op.base import TypeClass, allowed, check, type_class
from ompy.ompi.op import BAND, LAND, MAXLOC, NO_OP, REPLACE, SUM

C_INTEGER = {
    "SIGNED_CHAR", "SHORT", "INT", "LONG", "LONG_LONG", "UNSIGNED_CHAR", "UNSIGNED_SHORT",
    "UNSIGNED", "UNSIGNED_LONG", "UNSIGNED_LONG_LONG", "INT8_T", "INT16_T", "INT32_T", "INT64_T",
    "UINT8_T", "UINT16_T", "UINT32_T", "UINT64_T",
    "INTEGER", "INTEGER1", "INTEGER2", "INTEGER4", "INTEGER8",
}  # fmt: skip
MULTI_LANGUAGE = {"AINT", "OFFSET", "COUNT"}
FLOATING = {
    "FLOAT", "DOUBLE", "LONG_DOUBLE", "FLOAT16_T",
    "REAL", "DOUBLE_PRECISION", "REAL2", "REAL4", "REAL8",
}  # fmt: skip
LOGICAL = {"C_BOOL", "CXX_BOOL", "LOGICAL", "LOGICAL1", "LOGICAL2", "LOGICAL4", "LOGICAL8"}
COMPLEX = {
    "C_FLOAT_COMPLEX", "C_DOUBLE_COMPLEX", "C_LONG_DOUBLE_COMPLEX",
    "CXX_FLOAT_COMPLEX", "CXX_DOUBLE_COMPLEX", "CXX_LONG_DOUBLE_COMPLEX",
    "COMPLEX", "DOUBLE_COMPLEX", "COMPLEX8", "COMPLEX16",
}  # fmt: skip
BYTE = {"BYTE"}
PAIRS = {"SHORT_INT", "TWOINT", "LONG_INT", "FLOAT_INT", "DOUBLE_INT", "LONG_DOUBLE_INT"}
NOTHING = {"CHAR", "WCHAR", "PACKED", "CHARACTER"}

EXPECTED = {
    Intrinsic.MAX: C_INTEGER | MULTI_LANGUAGE | FLOATING,
    Intrinsic.MIN: C_INTEGER | MULTI_LANGUAGE | FLOATING,
    Intrinsic.SUM: C_INTEGER | MULTI_LANGUAGE | FLOATING | COMPLEX,
    Intrinsic.PROD: C_INTEGER | MULTI_LANGUAGE | FLOATING | COMPLEX,
    Intrinsic.LAND: C_INTEGER | LOGICAL,
    Intrinsic.LOR: C_INTEGER | LOGICAL,
    Intrinsic.LXOR: C_INTEGER | LOGICAL,
    Intrinsic.BAND: C_INTEGER | MULTI_LANGUAGE | BYTE,
    Intrinsic.BOR: C_INTEGER | MULTI_LANGUAGE | BYTE,
    Intrinsic.BXOR: C_INTEGER | MULTI_LANGUAGE | BYTE,
    Intrinsic.MAXLOC: PAIRS,
    Intrinsic.MINLOC: PAIRS,
    Intrinsic.REPLACE: set(),
    Intrinsic.NO_OP: set(),
}

#: Canonical keys: aliases (SIGNED_INT, BOOL, ...) are the same datatypes under other names.
KEYS = sorted({datatype.layout.key for datatype in BY_KEY.values() if datatype})


def test_every_predefined_datatype_is_classified():
    everything = C_INTEGER | MULTI_LANGUAGE | FLOATING | LOGICAL | COMPLEX | BYTE | PAIRS | NOTHING
    assert set(KEYS) == everything
    assert type_class(types.DOUBLE) is TypeClass.FLOATING_POINT
    assert type_class(types.BYTE) is TypeClass.BYTE
    assert type_class(types.UNSIGNED_CHAR) is TypeClass.C_INTEGER  # same bytes as BYTE
    assert type_class(types.DOUBLE.Dup()) is None


@pytest.mark.parametrize("op", list(Intrinsic), ids=lambda op: op.name)
@pytest.mark.parametrize("key", KEYS)
def test_reductions_are_defined_exactly_where_mpi_defines_them(op, key):
    datatype = BY_KEY[key]
    expected = key in EXPECTED[op]
    assert allowed(op, datatype) is expected
    if not expected:
        with pytest.raises(MPIException) as info:
            check(op, datatype)
        assert info.value.Get_error_class() == errors.ERR_OP
        assert f"MPI.{op.name}" in str(info.value)
        assert datatype.Get_name() in str(info.value)


@pytest.mark.parametrize("key", KEYS)
def test_accumulates_also_admit_replace_and_no_op_on_every_datatype(key):
    datatype = BY_KEY[key]
    assert allowed(Intrinsic.REPLACE, datatype, accumulate=True)
    assert allowed(Intrinsic.NO_OP, datatype, accumulate=True)
    assert allowed(Intrinsic.SUM, datatype, accumulate=True) is (key in EXPECTED[Intrinsic.SUM])


@pytest.mark.parametrize(
    ("op", "datatype", "says"),
    [
        (BAND, types.DOUBLE, "MPI.BAND is not defined on MPI_DOUBLE (floating point datatype)"),
        (SUM, types.DOUBLE_INT, "pair types are reduced with MPI.MAXLOC and MPI.MINLOC only"),
        (MAXLOC, types.DOUBLE, "MAXLOC and MINLOC apply to the value/index pair types"),
        (LAND, types.DOUBLE, "LAND, LOR and LXOR apply to C integer and logical datatypes"),
        (SUM, types.CHAR, "MPI.SUM is not defined on MPI_CHAR"),
        (REPLACE, types.INT, "one-sided accumulate operations only"),
        (NO_OP, types.INT, "one-sided accumulate operations only"),
    ],
)
def test_reduce_local_refuses_forbidden_combinations_with_a_clear_op_error(op, datatype, says):
    with default_instance():
        _refused(op, datatype, says)


def _refused(op, datatype, says):
    buffers = [np.zeros(2, datatype.dtype) for _ in range(2)]
    with pytest.raises(MPIException, match=re.escape(says)) as info:
        op.Reduce_local([buffers[0], datatype], [buffers[1], datatype])
    assert info.value.Get_error_class() == errors.ERR_OP


def test_predefined_operations_on_derived_datatypes_are_refused_for_now():
    with pytest.raises(MPIException, match="derived datatype") as info:
        check(Intrinsic.SUM, types.DOUBLE.Dup())
    assert info.value.Get_error_class() == errors.ERR_OP


def test_a_null_datatype_is_a_type_error():
    with pytest.raises(MPIException) as info:
        check(Intrinsic.SUM, types.DATATYPE_NULL)
    assert info.value.Get_error_class() == errors.ERR_TYPE
