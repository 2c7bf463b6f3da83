"""MPI.Op behaves as mpi4py's: handles, predefined operations on objects, user operations, Free.

Nothing here needs an op component: predefined operations on buffers are tested with the
framework (test_op_framework.py) and, numerically, with the ufunc component.
"""

import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.api.testing import default_instance
from ompy.ompi.datatype import predefined as types
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.instance import default
from ompy.ompi.op import (
    BAND,
    BOR,
    BXOR,
    LAND,
    LOR,
    LXOR,
    MAX,
    MAXLOC,
    MIN,
    MINLOC,
    NO_OP,
    OP_NULL,
    PREDEFINED,
    PROD,
    REPLACE,
    SUM,
    Op,
)

# -- predefined handles -------------------------------------------------------------------------

OPEN_MPI_FORTRAN_HANDLES = {
    "OP_NULL": 0,
    "MAX": 1,
    "MIN": 2,
    "SUM": 3,
    "PROD": 4,
    "LAND": 5,
    "BAND": 6,
    "LOR": 7,
    "BOR": 8,
    "LXOR": 9,
    "BXOR": 10,
    "MAXLOC": 11,
    "MINLOC": 12,
    "REPLACE": 13,
    "NO_OP": 14,
}


@pytest.fixture(autouse=True)
def installed_instance():
    """Reductions act on the default instance: a one-rank loopback one here."""
    with default_instance() as instance:
        yield instance


def test_every_predefined_operation_exists_with_open_mpi_fortran_handle():
    assert set(PREDEFINED) == set(OPEN_MPI_FORTRAN_HANDLES)
    for name, index in OPEN_MPI_FORTRAN_HANDLES.items():
        op = PREDEFINED[name]
        assert op.py2f() == op.handle == index
        assert Op.f2py(index) == op
        assert Op.fromhandle(index) == op


def test_predefined_operations_are_commutative_and_predefined():
    for name, op in PREDEFINED.items():
        assert op.is_predefined
        if name != "OP_NULL":
            assert op
            assert op.Is_commutative() and op.is_commutative
            assert repr(op) == f"<Op {name}>"


def test_op_null_is_false_and_a_new_op_is_null():
    assert not OP_NULL
    assert Op() == OP_NULL
    assert not Op()
    assert repr(OP_NULL) == "<Op OP_NULL>"
    with pytest.raises(MPIException) as info:
        OP_NULL.Is_commutative()
    assert info.value.Get_error_class() == errors.ERR_OP


def test_handles_refer_to_the_same_operation():
    copy = Op(SUM)
    assert copy == SUM and copy is not SUM
    assert copy != PROD
    assert hash(copy) == hash(SUM)
    assert copy(2, 3) == 5
    assert (SUM == 3) is False
    with pytest.raises(TypeError, match="takes an Op"):
        Op("SUM")


def test_predefined_operations_pickle_by_name():
    assert pickle.loads(pickle.dumps(SUM)) is SUM
    copy = pickle.loads(pickle.dumps(Op(MAXLOC)))  # another handle: a new handle, as mpi4py
    assert copy == MAXLOC and copy is not MAXLOC
    assert pickle.loads(pickle.dumps(OP_NULL)) is OP_NULL


def test_an_unknown_fortran_handle_is_op_null():
    assert Op.f2py(10_000) == OP_NULL
    with pytest.raises(TypeError):
        Op.f2py("3")


# -- predefined operations on Python objects (mpi4py's semantics) --------------------------------


@pytest.mark.parametrize(
    ("op", "x", "y", "result"),
    [
        (MIN, 2, 3, 2),
        (MAX, 2, 3, 3),
        (SUM, 2, 3, 5),
        (PROD, 2, 3, 6),
        (SUM, [1], [2], [1, 2]),
        (SUM, "a", "b", "ab"),
        (BAND, 0b1100, 0b1010, 0b1000),
        (BOR, 0b1100, 0b1010, 0b1110),
        (BXOR, 0b1100, 0b1010, 0b0110),
        (LAND, 2, 3, True),
        (LAND, 2, 0, False),
        (LOR, 0, [], False),
        (LOR, 0, [1], True),
        (LXOR, 5, 0, True),
        (LXOR, 5, 7, False),
        (REPLACE, 2, 3, 3),
        (REPLACE, 3, 2, 2),
        (NO_OP, 2, 3, 2),
        (NO_OP, 3, 2, 3),
    ],
)
def test_predefined_operations_on_objects(op, x, y, result):
    got = op(x, y)
    assert got == result
    assert type(got) is type(result)


def test_max_and_min_keep_the_first_argument_on_ties():
    a, b = [1], [1]
    assert MAX(a, b) is a
    assert MIN(a, b) is a


def test_maxloc_and_minloc_take_value_index_pairs_and_ties_go_to_the_lower_index():
    assert MAXLOC((1, 0), (2, 5)) == (2, 5)
    assert MAXLOC((3, 7), (2, 5)) == (3, 7)
    assert MAXLOC((2, 7), (2, 5)) == (2, 5)
    assert MAXLOC((2, 4), (2, 5)) == (2, 4)
    assert MINLOC((1, 9), (2, 5)) == (1, 9)
    assert MINLOC((3, 0), (2, 5)) == (2, 5)
    assert MINLOC((2, 7), (2, 5)) == (2, 5)
    assert MINLOC((2, 4), (2, 5)) == (2, 4)


@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 20)), min_size=1, max_size=12))
def test_maxloc_folded_over_ranks_finds_the_first_maximum(pairs):
    result = pairs[0]
    for pair in pairs[1:]:
        result = MAXLOC(result, pair)
    best = max(value for value, _ in pairs)
    assert result == (best, min(index for value, index in pairs if value == best))


def test_calling_op_null_is_an_error():
    with pytest.raises(ValueError, match="OP_NULL"):
        OP_NULL(1, 2)


# -- user-defined operations --------------------------------------------------------------------


def test_create_makes_a_user_operation_with_its_commutativity():
    def add(inmem, inoutmem, datatype):
        return inmem + inoutmem

    op = Op.Create(add)
    other = Op.Create(add, commute=True)
    try:
        assert op and not op.is_predefined
        assert op.Is_commutative() is False
        assert other.is_commutative is True
        assert op != other
        assert op.py2f() >= 15 and op.py2f() != other.py2f()
        assert Op.f2py(op.py2f()) == op
        assert "add" in repr(op)
    finally:
        op.Free()
        other.Free()


def test_create_refuses_what_is_not_callable():
    with pytest.raises(TypeError, match="callable"):
        Op.Create(42)


def test_a_user_operation_on_objects_is_called_with_none_as_datatype():
    calls = []

    def concat(x, y, datatype):
        calls.append(datatype)
        return f"{x}{y}"

    op = Op.Create(concat)
    try:
        assert op("a", "b") == "ab"
        assert calls == [None]
    finally:
        op.Free()


def _keep_right(a, b, datatype):
    return b


def test_user_operations_travel_as_their_function_and_freed_ones_cannot():
    op = Op.Create(_keep_right, commute=True)
    copy = pickle.loads(pickle.dumps(op))  # mpi4py's form: Op.Create(function, commute)
    try:
        assert copy != op and copy.Is_commutative() and copy(1, 2) == 2
    finally:
        copy.Free()
    local = Op.Create(lambda a, b, t: b)
    with pytest.raises((pickle.PicklingError, AttributeError)):  # the function cannot travel
        pickle.dumps(local)
    local.Free()
    alias = Op(op)
    op.Free()
    with pytest.raises(ValueError, match="cannot serialize"):
        pickle.dumps(alias)  # a handle to the freed operation


def test_reduce_local_gives_the_user_function_byte_views_and_the_datatype():
    seen = []

    def scaled_add(inmem, inoutmem, datatype):
        seen.append((type(inmem), inmem.format, inmem.nbytes, inoutmem.nbytes, datatype))
        a = np.frombuffer(inmem, datatype.dtype)
        b = np.frombuffer(inoutmem, datatype.dtype)
        b[:] = 10 * a + b  # not commutative: tells in from inout

    op = Op.Create(scaled_add)
    try:
        inbuf = np.array([1, 2, 3], dtype="i")
        inout = np.array([4, 5, 6], dtype="i")
        op.Reduce_local(inbuf, inout)
        assert inout.tolist() == [14, 25, 36]
        assert inbuf.tolist() == [1, 2, 3]
        assert seen == [(memoryview, "B", 12, 12, types.INT)]
        # a count smaller than the buffers: the function sees exactly the elements
        op.Reduce_local([inbuf, 2, types.INT], [inout, 2, types.INT])
        assert inout.tolist() == [24, 45, 36]
        assert seen[-1][2:4] == (8, 8)
    finally:
        op.Free()


def test_reduce_local_with_a_user_operation_works_in_place():
    def double_add(inmem, inoutmem, datatype):
        b = np.frombuffer(inoutmem, "d")
        b += np.frombuffer(inmem, "d")

    op = Op.Create(double_add, commute=True)
    try:
        buf = np.array([1.5, 2.5])
        op.Reduce_local(buf, buf)
        assert buf.tolist() == [3.0, 5.0]
    finally:
        op.Free()


def test_reduce_local_checks_counts_datatypes_and_writability():
    op = Op.Create(lambda a, b, t: None)
    try:
        with pytest.raises(ValueError, match="mismatch in inbuf count 3 and inoutbuf count 2"):
            op.Reduce_local(np.zeros(3), np.zeros(2))
        with pytest.raises(ValueError, match="mismatch in inbuf and inoutbuf MPI datatypes"):
            op.Reduce_local(np.zeros(2, "i"), np.zeros(2, "f"))
        with pytest.raises(BufferError, match="read-only"):
            op.Reduce_local(np.zeros(2), bytes(16))
    finally:
        op.Free()


def test_an_exception_in_the_user_function_reaches_the_caller():
    def failing(inmem, inoutmem, datatype):
        raise ZeroDivisionError("inside the user function")

    op = Op.Create(failing)
    try:
        with pytest.raises(ZeroDivisionError, match="inside the user function"):
            op.Reduce_local(np.zeros(1), np.zeros(1))
    finally:
        op.Free()


def test_reduce_local_with_op_null_is_an_op_error():
    with pytest.raises(MPIException, match="OP_NULL") as info:
        OP_NULL.Reduce_local(np.zeros(1), np.zeros(1))
    assert info.value.Get_error_class() == errors.ERR_OP


# -- Free -------------------------------------------------------------------------------------


def test_free_turns_the_handle_into_op_null_and_releases_the_fortran_handle():
    op = Op.Create(lambda a, b, t: b)
    index = op.py2f()
    op.Free()
    assert op == OP_NULL and not op
    assert Op.f2py(index) == OP_NULL
    again = Op.Create(lambda a, b, t: b)
    try:
        assert again.py2f() == index  # freed numbers are reused, lowest first
    finally:
        again.Free()


def test_freeing_twice_or_freeing_op_null_is_an_op_error():
    op = Op.Create(lambda a, b, t: b)
    op.Free()
    for target in (op, OP_NULL):
        with pytest.raises(MPIException, match="OP_NULL") as info:
            target.Free()
        assert info.value.Get_error_class() == errors.ERR_OP


@pytest.mark.parametrize("name", [n for n in PREDEFINED if n != "OP_NULL"])
def test_predefined_operations_cannot_be_freed(name):
    op = PREDEFINED[name]
    with pytest.raises(MPIException, match=f"MPI.{name} is a predefined operation") as info:
        op.Free()
    assert info.value.Get_error_class() == errors.ERR_OP
    assert op  # still usable
    op.free()  # the lowercase form leaves predefined operations alone
    assert op


def test_lowercase_free_frees_user_operations_and_ignores_null():
    op = Op.Create(lambda a, b, t: b)
    op.free()
    assert op == OP_NULL
    op.free()
    OP_NULL.free()


def test_another_handle_to_a_freed_operation_fails_clearly():
    op = Op.Create(lambda a, b, t: b)
    alias = Op(op)
    op.Free()
    assert alias  # a handle is not told, as in C, but using it is an error
    assert "freed" in repr(alias)
    with pytest.raises(ValueError, match="freed"):
        alias(1, 2)
    with pytest.raises(MPIException, match="freed") as info:
        alias.Reduce_local(np.zeros(1), np.zeros(1))
    assert info.value.Get_error_class() == errors.ERR_OP


def test_a_user_kernel_accepts_any_contiguous_buffer_and_passes_bytes_of_count_elements():
    seen = []

    def record(inmem, inoutmem, datatype):
        seen.append((inmem.format, inmem.nbytes, inoutmem.format, inoutmem.nbytes))

    op = Op.Create(record)
    try:
        run = default().op.kernel(op, types.DOUBLE)
        assert default().op.kernel(op, types.DOUBLE) is run  # made once per datatype
        run(np.zeros(4), np.zeros(4), 3)  # typed arrays rather than byte views
        assert seen == [("B", 24, "B", 24)]
    finally:
        op.Free()
