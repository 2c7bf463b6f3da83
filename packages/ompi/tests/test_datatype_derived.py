"""Derived datatypes: constructors, bounds, envelope/contents, decode, pickling, errors.

Layouts are checked against numpy: a datatype describing part of an array must pack to exactly
what numpy indexing selects from that array (Pack itself is specified in
``test_datatype_pack.py``).
"""

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.ompi import errors
from ompy.ompi.api.testing import make_world
from ompy.ompi.datatype import DATATYPE_NULL, Datatype, require_committed
from ompy.ompi.datatype import predefined as mpi


@pytest.fixture(scope="module")
def comm():
    (world,) = make_world(1)
    return world


def packed(datatype, array, comm):
    """The bytes ``datatype`` packs from ``array`` (as many elements as the array holds)."""
    datatype.Commit()
    out = bytearray(
        datatype.Pack_size(len(array.view(np.uint8).reshape(-1)) // datatype.extent, comm)
    )
    position = datatype.Pack(array, out, 0, comm)
    assert position == len(out)
    return bytes(out)


def error_class(call, *args):
    with pytest.raises(MPI.Exception) as info:
        call(*args)
    return info.value.Get_error_class(), str(info.value)


# -- bounds and sizes -----------------------------------------------------------------------------


def test_vector_has_the_bounds_mpi_defines():
    vector = mpi.DOUBLE.Create_vector(3, 2, 4)
    assert vector.Get_size() == 3 * 2 * 8
    assert vector.Get_extent() == (0, (2 * 4 + 2) * 8)
    assert vector.Get_true_extent() == (0, 80)
    assert (vector.lb, vector.ub, vector.true_lb, vector.true_ub) == (0, 80, 0, 80)


def test_resized_changes_bounds_but_not_data():
    resized = mpi.INT.Create_resized(-4, 16)
    assert resized.Get_extent() == (-4, 16)
    assert resized.Get_true_extent() == (0, 4)
    assert resized.size == 4
    assert resized.Resized(0, 8).Get_extent() == (0, 8)


def test_constructed_extents_are_padded_to_the_strictest_alignment_unless_resized():
    """MPI's epsilon, with Open MPI 5's results for the same calls."""
    struct = Datatype.Create_struct([1, 1], [0, 8], [mpi.DOUBLE, mpi.CHAR])
    assert struct.Get_size() == 9
    assert struct.Get_extent() == (0, 16)
    assert Datatype.Create_struct([1, 1], [0, 4], [mpi.INT, mpi.CHAR]).extent == 8
    assert Datatype.Create_struct([1, 1], [0, 2], [mpi.SHORT, mpi.CHAR]).extent == 4
    assert Datatype.Create_struct([1, 1], [-3, 8], [mpi.CHAR, mpi.INT]).Get_extent() == (-3, 16)
    assert Datatype.Create_struct([1, 0], [0, 4], [mpi.CHAR, mpi.DOUBLE]).extent == 1  # empty
    assert mpi.DOUBLE.Create_hvector(2, 1, 12).extent == 24
    assert mpi.DOUBLE.Create_hvector(1, 1, 12).extent == 8
    assert mpi.DOUBLE.Create_hindexed([1, 1], [-4, 8]).Get_extent() == (-4, 24)
    assert mpi.INT.Create_hindexed_block(1, [0, 6]).extent == 12
    assert struct.Create_contiguous(2).extent == 32
    resized = Datatype.Create_struct([1, 1], [0, 4], [mpi.INT, mpi.CHAR]).Create_resized(0, 5)
    assert resized.Create_contiguous(2).extent == 10  # an explicit upper bound is kept
    assert Datatype.Create_struct([1], [0], [mpi.DOUBLE.Create_resized(0, 12)]).extent == 12


def test_hindexed_with_negative_displacement_moves_the_lower_bound():
    hindexed = mpi.INT.Create_hindexed([1, 2], [-8, 4])
    assert hindexed.Get_extent() == (-8, 20)
    assert hindexed.Get_true_extent() == (-8, 20)


# -- layouts against numpy indexing ----------------------------------------------------------------


@pytest.mark.parametrize("order", [MPI.ORDER_C, MPI.ORDER_FORTRAN])
@pytest.mark.parametrize(
    ("sizes", "subsizes", "starts"),
    [
        ([6], [3], [2]),
        ([4, 5], [2, 3], [1, 2]),
        ([3, 4, 5], [2, 2, 3], [1, 0, 2]),
        ([3, 3], [0, 3], [3, 0]),
    ],
)
def test_subarray_packs_what_numpy_slicing_selects(comm, sizes, subsizes, starts, order):
    numpy_order = "C" if order == MPI.ORDER_C else "F"
    array = np.arange(np.prod(sizes), dtype=np.int32).reshape(sizes, order=numpy_order)
    sub = mpi.INT.Create_subarray(sizes, subsizes, starts, order=order)
    assert sub.Get_extent() == (0, array.nbytes)
    flat = np.asarray(array).ravel(order="K")
    region = tuple(slice(s, s + n) for s, n in zip(starts, subsizes, strict=True))
    expected = np.ascontiguousarray(array[region]).ravel(order=numpy_order).tobytes()
    assert packed(sub, flat, comm) == expected


def _owned(gsize, distrib, darg, psize, coord):
    """Indices of one dimension a process owns, straight from the definitions in MPI 4.1 4.1.4."""
    if distrib == MPI.DISTRIBUTE_NONE:
        return list(range(gsize))
    if distrib == MPI.DISTRIBUTE_BLOCK:
        block = -(-gsize // psize) if darg == MPI.DISTRIBUTE_DFLT_DARG else darg
        return [i for i in range(gsize) if i // block == coord]
    block = 1 if darg == MPI.DISTRIBUTE_DFLT_DARG else darg
    return [i for i in range(gsize) if (i // block) % psize == coord]


@pytest.mark.parametrize("order", [MPI.ORDER_C, MPI.ORDER_FORTRAN])
@pytest.mark.parametrize(
    ("gsizes", "distribs", "dargs", "psizes"),
    [
        ([10], [MPI.DISTRIBUTE_BLOCK], [MPI.DISTRIBUTE_DFLT_DARG], [3]),
        ([10], [MPI.DISTRIBUTE_CYCLIC], [2], [3]),
        (
            [7, 6],
            [MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC],
            [MPI.DISTRIBUTE_DFLT_DARG, 1],
            [2, 2],
        ),
        (
            [5, 4, 3],
            [MPI.DISTRIBUTE_CYCLIC, MPI.DISTRIBUTE_NONE, MPI.DISTRIBUTE_BLOCK],
            [2, -1, 2],
            [2, 1, 2],
        ),
    ],
)
def test_darray_packs_each_process_share_as_mpi_defines_it(  # noqa: PLR0917 (parameters)
    comm, gsizes, distribs, dargs, psizes, order
):
    numpy_order = "C" if order == MPI.ORDER_C else "F"
    size = int(np.prod(psizes))
    array = np.arange(np.prod(gsizes), dtype=np.float64).reshape(gsizes, order=numpy_order)
    flat = array.ravel(order="K")
    seen = []
    for rank in range(size):
        coords = np.unravel_index(rank, psizes)  # the process grid is row-major
        owned = [
            _owned(g, d, a, p, c)
            for g, d, a, p, c in zip(gsizes, distribs, dargs, psizes, coords, strict=True)
        ]
        darray = mpi.DOUBLE.Create_darray(size, rank, gsizes, distribs, dargs, psizes, order)
        assert darray.Get_extent() == (0, array.nbytes)
        expected = array[np.ix_(*owned)].ravel(order=numpy_order)
        assert packed(darray, flat, comm) == expected.tobytes()
        seen.extend(expected.tolist())
    assert sorted(seen) == flat.tolist()  # every element belongs to exactly one process


def test_vector_column_of_a_matrix(comm):
    matrix = np.arange(20, dtype=np.float64).reshape(4, 5)
    column = mpi.DOUBLE.Create_vector(4, 1, 5)
    # One column element is the whole matrix minus the trailing row rest: pack it alone.
    assert (
        packed(column.Create_resized(0, matrix.nbytes), matrix.ravel(), comm)
        == matrix[:, 0].tobytes()
    )


# -- envelope, contents, decode -------------------------------------------------------------------


CONSTRUCTIONS = [
    ("Create_contiguous", (3,), MPI.COMBINER_CONTIGUOUS, ([], [], [3])),
    ("Create_vector", (2, 3, 4), MPI.COMBINER_VECTOR, ([], [], [2, 3, 4])),
    ("Create_hvector", (2, 3, 40), MPI.COMBINER_HVECTOR, ([], [], [2, 3, 40])),
    ("Create_indexed", ([1, 2], [0, 5]), MPI.COMBINER_INDEXED, ([], [], [2, 1, 2, 0, 5])),
    ("Create_hindexed", ([1, 2], [0, 40]), MPI.COMBINER_HINDEXED, ([], [], [2, 1, 2, 0, 40])),
    ("Create_indexed_block", (2, [0, 5, 9]), MPI.COMBINER_INDEXED_BLOCK, ([], [], [3, 2, 0, 5, 9])),
    ("Create_hindexed_block", (2, [0, 40]), MPI.COMBINER_HINDEXED_BLOCK, ([], [], [2, 2, 0, 40])),
    (
        "Create_subarray",
        ([4, 5], [2, 3], [1, 2]),
        MPI.COMBINER_SUBARRAY,
        ([2, MPI.ORDER_C], [], [4, 5, 2, 3, 1, 2]),
    ),
    (
        "Create_darray",
        (
            4,
            1,
            [8, 6],
            [MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC],
            [MPI.DISTRIBUTE_DFLT_DARG, 2],
            [2, 2],
        ),
        MPI.COMBINER_DARRAY,
        ([4, 1, 2, 0, 1, -1, 2, 2, 2, MPI.ORDER_C], [], [8, 6]),
    ),
    ("Create_resized", (-8, 32), MPI.COMBINER_RESIZED, ([], [], [-8, 32])),
]


@pytest.mark.parametrize(
    ("name", "args", "combiner", "contents"), CONSTRUCTIONS, ids=[c[0] for c in CONSTRUCTIONS]
)
def test_envelope_and_contents_record_the_call(name, args, combiner, contents):
    made = getattr(mpi.DOUBLE, name)(*args)
    integers, addresses, counts = contents
    assert made.Get_envelope() == (len(integers), len(addresses), len(counts), 1, combiner)
    assert made.envelope == made.Get_envelope() and made.combiner == combiner
    i, a, c, d = made.Get_contents()
    assert (i, a, c) == (integers, addresses, counts)
    assert d == [mpi.DOUBLE] and d[0] is mpi.DOUBLE  # predefined types come back as themselves
    assert not made.is_named and not made.is_predefined
    base, combiner_name, params = made.decode()
    assert base is mpi.DOUBLE
    assert combiner_name == name.removeprefix("Create_").upper()
    again = getattr(base, name)(**params)  # decode names the keyword arguments
    assert again.Get_contents()[:3] == (i, a, c)
    assert (again.Get_extent(), again.Get_size()) == (made.Get_extent(), made.Get_size())


def test_struct_and_dup_envelopes():
    inner = mpi.INT.Create_vector(2, 1, 3)
    struct = Datatype.Create_struct([1, 2], [0, 16], [mpi.DOUBLE, inner])
    assert struct.Get_envelope() == (0, 0, 5, 2, MPI.COMBINER_STRUCT)
    _, _, c, d = struct.Get_contents()
    assert c == [2, 1, 2, 0, 16] and d[0] is mpi.DOUBLE and d[1] == inner and d[1] is not inner
    base, name, params = struct.decode()
    assert base == DATATYPE_NULL and name == "STRUCT"
    assert params["blocklengths"] == [1, 2] and params["displacements"] == [0, 16]
    dup = inner.Dup()
    assert dup.Get_envelope() == (0, 0, 0, 1, MPI.COMBINER_DUP)
    assert dup.decode()[:2] == (inner, "DUP")
    assert mpi.DOUBLE.decode() == (mpi.DOUBLE, "NAMED", {})
    assert mpi.DOUBLE.Get_envelope() == (0, 0, 0, 0, MPI.COMBINER_NAMED)
    assert mpi.DOUBLE.is_named and mpi.DOUBLE.is_predefined


def test_contents_handles_are_references_of_their_own():
    inner = mpi.INT.Create_contiguous(2)
    outer = inner.Create_contiguous(3)
    (handle,) = outer.Get_contents()[3]
    handle.Free()  # gives back the reference Get_contents made
    assert inner.Get_size() == 8  # the program's own handle still works
    inner.Free()
    (again,) = outer.Get_contents()[3]
    assert again.Get_size() == 8  # the outer type keeps what it was made of
    assert outer.Commit().Get_size() == 24


def test_a_freed_datatype_is_refused_through_every_handle():
    vector = mpi.INT.Create_vector(2, 1, 2)
    other = Datatype(vector)
    vector.Free()
    assert vector == DATATYPE_NULL
    klass, message = error_class(other.Get_size)
    assert klass == errors.ERR_TYPE and "freed" in message
    klass, _ = error_class(vector.Get_size)
    assert klass == errors.ERR_TYPE


# -- pickling -------------------------------------------------------------------------------------


def test_derived_datatypes_pickle_as_the_calls_that_made_them(comm):
    column = mpi.DOUBLE.Create_vector(4, 1, 5)
    struct = Datatype.Create_struct([1, 1], [0, 8], [mpi.INT, column]).Create_resized(0, 200)
    back = pickle.loads(pickle.dumps(struct))
    assert back is not struct and back != struct
    assert back.Get_envelope() == struct.Get_envelope()
    assert back.Get_contents()[:3] == struct.Get_contents()[:3]
    inner = back.Get_contents()[3][0]
    assert inner.Get_contents()[3][1].Get_contents()[:3] == column.Get_contents()[:3]
    data = np.random.default_rng(1).integers(0, 255, 400, dtype=np.uint8)
    assert packed(back, data, comm) == packed(struct, data, comm)
    f90 = Datatype.Create_f90_real(6, 30)
    assert pickle.loads(pickle.dumps(f90)).Get_envelope() == f90.Get_envelope()
    pair = Datatype.Get_value_index(mpi.FLOAT, mpi.SHORT)
    assert pickle.loads(pickle.dumps(pair)).Get_size() == pair.Get_size()


# -- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "args", "klass", "says"),
    [
        ("Create_contiguous", (-1,), errors.ERR_COUNT, "count must not be negative"),
        ("Create_vector", (-1, 1, 1), errors.ERR_COUNT, "count must not be negative"),
        ("Create_vector", (1, -1, 1), errors.ERR_ARG, "blocklength must not be negative"),
        (
            "Create_indexed",
            ([1, -2], [0, 1]),
            errors.ERR_ARG,
            "blocklengths[1] must not be negative",
        ),
        ("Create_hindexed_block", (-1, [0]), errors.ERR_ARG, "blocklength must not be negative"),
        ("Create_subarray", ([4], [5], [0]), errors.ERR_ARG, "subsizes[0] = 5"),
        ("Create_subarray", ([4], [2], [3]), errors.ERR_ARG, "starts[0] = 3"),
        ("Create_subarray", ([4], [2], [0], 7), errors.ERR_ARG, "ORDER_C or ORDER_FORTRAN"),
        (
            "Create_darray",
            (4, 0, [8], [MPI.DISTRIBUTE_BLOCK], [-1], [3]),
            errors.ERR_ARG,
            "multiply to size",
        ),
        ("Create_darray", (2, 2, [8], [MPI.DISTRIBUTE_BLOCK], [-1], [2]), errors.ERR_ARG, "rank 2"),
        (
            "Create_darray",
            (2, 0, [8], [MPI.DISTRIBUTE_BLOCK], [3], [2]),
            errors.ERR_ARG,
            "too small",
        ),
        (
            "Create_darray",
            (2, 0, [8], [MPI.DISTRIBUTE_NONE], [-1], [2]),
            errors.ERR_ARG,
            "not distributed",
        ),
        ("Create_darray", (2, 0, [8], [9], [-1], [2]), errors.ERR_ARG, "distribs[0] = 9"),
    ],
)
def test_bad_arguments_are_clear_mpi_errors(call, args, klass, says):
    got, message = error_class(getattr(mpi.INT, call), *args)
    assert got == klass
    assert says in message and call in message


def test_mismatched_lists_and_wrong_types_are_python_errors():
    with pytest.raises(ValueError, match="incompatible array of length 1 for displacements"):
        mpi.INT.Create_indexed([1, 2], [0])
    with pytest.raises(ValueError, match="datatypes"):
        Datatype.Create_struct([1], [0], [mpi.INT, mpi.FLOAT])
    with pytest.raises(TypeError, match="count must be an int"):
        mpi.INT.Create_contiguous(1.5)
    with pytest.raises(TypeError, match="must be a Datatype"):
        Datatype.Create_struct([1], [0], ["i"])


def test_null_datatypes_are_type_errors():
    assert error_class(DATATYPE_NULL.Create_contiguous, 2)[0] == errors.ERR_TYPE
    klass, message = error_class(Datatype.Create_struct, [1], [0], [DATATYPE_NULL])
    assert klass == errors.ERR_TYPE and "datatypes[0]" in message
    assert error_class(DATATYPE_NULL.Free)[0] == errors.ERR_TYPE
    assert error_class(mpi.INT.Free)[0] == errors.ERR_TYPE


def test_communication_requires_a_committed_datatype():
    vector = mpi.INT.Create_vector(2, 1, 2)
    klass, message = error_class(require_committed, vector, "Send")
    assert klass == errors.ERR_TYPE and "Send" in message and "Commit()" in message
    assert require_committed(vector.Commit(), "Send") is vector.layout
    assert require_committed(mpi.INT, "Send") is mpi.INT.layout  # predefined: always committed
    assert error_class(require_committed, DATATYPE_NULL, "Recv")[0] == errors.ERR_TYPE


# -- names and codes ------------------------------------------------------------------------------


def test_names():
    vector = mpi.INT.Create_vector(2, 1, 2)
    assert vector.Get_name() == ""
    vector.Set_name("pairs")
    assert vector.name == "pairs" and Datatype(vector).Get_name() == "pairs"
    assert vector.Dup().Get_name() == "Dup pairs"
    assert DATATYPE_NULL.Get_name() == "MPI_DATATYPE_NULL"


def test_every_predefined_code_maps_back_to_a_datatype_with_the_same_codes():
    for key, datatype in mpi.BY_KEY.items():
        if not datatype or datatype.typechar == "V":  # absent here, or a pair type
            continue
        code = datatype.tocode()
        again = Datatype.fromcode(code)
        assert (again.typechar, again.typestr) == (datatype.typechar, datatype.typestr), key
        assert again.Get_size() == datatype.Get_size(), key
        dup = datatype.Dup()
        assert (dup.tocode(), dup.typechar, dup.typestr) == (
            code,
            datatype.typechar,
            datatype.typestr,
        )


def test_derived_datatypes_have_no_code():
    vector = mpi.INT.Create_vector(2, 1, 2)
    assert vector.typechar == "V" and vector.typestr == f"V{vector.extent}"
    assert mpi.TWOINT.typechar == "V" and mpi.TWOINT.typestr == "V8"
    with pytest.raises(ValueError, match="cannot map"):
        vector.tocode()
    with pytest.raises(ValueError, match="cannot map DATATYPE_NULL"):
        DATATYPE_NULL.tocode()
    assert DATATYPE_NULL.typechar == "" and DATATYPE_NULL.typestr == ""


@pytest.mark.parametrize(
    ("code", "key"),
    [("d", "DOUBLE"), ("f8", "DOUBLE"), ("i4", "INT32_T"), ("?", "C_BOOL"), ("e", "FLOAT16_T"),
     ("p", "AINT"), ("n", "COUNT"), ("Zd", "C_DOUBLE_COMPLEX"), ("S1", "CHAR"), ("M8", "INT64_T")],
)  # fmt: skip
def test_fromcode_knows_mpi4pys_codes(code, key):
    assert Datatype.fromcode(code) is mpi.BY_KEY[key]


def test_numpy_dtypes_of_datatypes():
    assert mpi.DOUBLE.dtype == np.float64
    assert mpi.DOUBLE.Create_vector(2, 1, 3).dtype == np.float64  # one basic kind: reducible
    assert mpi.DOUBLE_INT.dtype.names == ("value", "index")
    mixed = Datatype.Create_struct([1, 1], [0, 8], [mpi.DOUBLE, mpi.INT])
    assert mixed.dtype == np.dtype("V16")  # raw bytes of the (padded) extent


# -- predefined completeness, Fortran and pairs ---------------------------------------------------


def test_mpi4pys_predefined_names_all_exist():
    names = """PACKED BYTE AINT OFFSET COUNT CHAR WCHAR SIGNED_CHAR SHORT INT LONG LONG_LONG
    UNSIGNED_CHAR UNSIGNED_SHORT UNSIGNED UNSIGNED_LONG UNSIGNED_LONG_LONG FLOAT DOUBLE LONG_DOUBLE
    C_BOOL INT8_T INT16_T INT32_T INT64_T UINT8_T UINT16_T UINT32_T UINT64_T FLOAT16_T FLOAT32_T
    FLOAT64_T BFLOAT16_T C_COMPLEX C_FLOAT_COMPLEX C_DOUBLE_COMPLEX C_LONG_DOUBLE_COMPLEX CXX_BOOL
    CXX_FLOAT_COMPLEX CXX_DOUBLE_COMPLEX CXX_LONG_DOUBLE_COMPLEX SHORT_INT INT_INT TWOINT LONG_INT
    FLOAT_INT DOUBLE_INT LONG_DOUBLE_INT CHARACTER LOGICAL INTEGER REAL DOUBLE_PRECISION COMPLEX
    DOUBLE_COMPLEX LOGICAL1 LOGICAL2 LOGICAL4 LOGICAL8 LOGICAL16 INTEGER1 INTEGER2 INTEGER4 INTEGER8
    INTEGER16 REAL2 REAL4 REAL8 REAL16 COMPLEX4 COMPLEX8 COMPLEX16 COMPLEX32 UNSIGNED_INT
    SIGNED_SHORT SIGNED_INT SIGNED_LONG SIGNED_LONG_LONG BOOL SINT8_T SINT16_T SINT32_T SINT64_T
    F_BOOL F_INT F_FLOAT F_DOUBLE F_COMPLEX F_FLOAT_COMPLEX F_DOUBLE_COMPLEX""".split()  # noqa: SIM905
    for name in names:
        assert isinstance(getattr(MPI, name), Datatype), name
    for name in ("COMBINER_NAMED", "COMBINER_DARRAY", "DISTRIBUTE_DFLT_DARG", "TYPECLASS_REAL"):
        assert isinstance(getattr(MPI, name), int)
    assert MPI.FLOAT32_T is MPI.FLOAT and MPI.F_DOUBLE is MPI.DOUBLE_PRECISION
    assert MPI.REAL16 == MPI.DATATYPE_NULL  # numpy has no IEEE quad here
    assert (MPI.INTEGER.size, MPI.LOGICAL.size, MPI.DOUBLE_COMPLEX.size, MPI.REAL2.size) == (
        4,
        4,
        16,
        2,
    )


def test_f90_types_pick_the_smallest_kind_that_fits():
    assert Datatype.Create_f90_integer(2).size == 1
    assert Datatype.Create_f90_integer(9).size == 4
    assert Datatype.Create_f90_integer(10).size == 8
    real = Datatype.Create_f90_real(6, 30)
    assert real.size == 4 and real.is_predefined and not real.is_named
    assert real.Get_envelope() == (2, 0, 0, 0, MPI.COMBINER_F90_REAL)
    assert real.Get_contents() == ([6, 30], [], [], [])
    assert real.decode() == (DATATYPE_NULL, "F90_REAL", {"p": 6, "r": 30})
    assert real.tocode() == "f4"
    assert Datatype.Create_f90_real(15, MPI.UNDEFINED).size == 8
    assert Datatype.Create_f90_complex(MPI.UNDEFINED, 300).size == 16
    assert error_class(Datatype.Create_f90_integer, 40)[0] == errors.ERR_ARG
    assert error_class(Datatype.Create_f90_real, 40, 10)[0] == errors.ERR_ARG
    assert error_class(real.Free)[0] == errors.ERR_TYPE


@pytest.mark.parametrize(
    ("typeclass", "size", "key"),
    [(MPI.TYPECLASS_INTEGER, 4, "INTEGER4"), (MPI.TYPECLASS_REAL, 8, "REAL8"),
     (MPI.TYPECLASS_COMPLEX, 16, "COMPLEX16"), (MPI.TYPECLASS_LOGICAL, 1, "LOGICAL1")],
)  # fmt: skip
def test_match_size(typeclass, size, key):
    assert Datatype.Match_size(typeclass, size) is mpi.BY_KEY[key]


def test_match_size_without_such_a_type_says_what_there_is():
    klass, message = error_class(Datatype.Match_size, MPI.TYPECLASS_INTEGER, 16)
    assert klass == errors.ERR_ARG and "1, 2, 4, 8" in message
    assert error_class(Datatype.Match_size, 99, 4)[0] == errors.ERR_ARG


def test_value_index_pairs():
    for value, pair in [
        (mpi.SHORT, mpi.SHORT_INT),
        (mpi.DOUBLE, mpi.DOUBLE_INT),
        (mpi.SIGNED_INT, mpi.TWOINT),
    ]:
        assert Datatype.Get_value_index(value, mpi.INT) is pair
    assert Datatype.Get_value_index(mpi.DOUBLE, mpi.FLOAT) == DATATYPE_NULL
    made = Datatype.Get_value_index(mpi.DOUBLE, mpi.SHORT)
    assert made.combiner == MPI.COMBINER_VALUE_INDEX and made.is_predefined and not made.is_named
    assert (made.Get_size(), made.Get_extent()) == (10, (0, 16))
    assert made.decode() == (
        DATATYPE_NULL,
        "VALUE_INDEX",
        {"value": mpi.DOUBLE, "index": mpi.SHORT},
    )
    assert error_class(Datatype.Get_value_index, DATATYPE_NULL, mpi.INT)[0] == errors.ERR_TYPE
    made.Free()


def test_pairs_and_predefined_types_cannot_be_freed_but_derived_ones_can():
    for datatype in (mpi.DOUBLE_INT, mpi.INT, mpi.INTEGER):
        assert error_class(datatype.Free)[0] == errors.ERR_TYPE
    for made in (mpi.INT.Dup(), mpi.INT.Create_contiguous(2)):
        made.Free()
        assert made == DATATYPE_NULL


def test_zero_counts_make_empty_types():
    for made in (
        mpi.INT.Create_contiguous(0),
        mpi.INT.Create_vector(0, 3, 2),
        mpi.INT.Create_indexed([], []),
        Datatype.Create_struct([], [], []),
    ):
        assert made.Get_size() == 0 and made.Get_extent() == (0, 0)


def test_handles_compare_by_datatype_and_keep_classes():
    class MyType(Datatype):
        pass

    mine = MyType(mpi.INT)
    vector = mine.Create_vector(2, 1, 2)
    assert type(vector) is MyType and type(MyType.Create_struct([1], [0], [mpi.INT])) is MyType
    assert vector == Datatype(vector) and vector != mine.Create_vector(2, 1, 2)


# -- absolute addresses (MPI.BOTTOM) ---------------------------------------------------------------


def test_datatypes_of_absolute_addresses_reach_the_data_through_bottom():
    from ompy.ompi.datatype.absolute import absolute_memory
    from ompy.opal.datatype.convertor import Convertor

    values, index = np.array([1.5, 2.5, 3.5]), np.array([7, 8], np.int32)
    addresses = [MPI.Get_address(values), MPI.Get_address(index)]
    struct = Datatype.Create_struct([3, 2], addresses, [mpi.DOUBLE, mpi.INT]).Commit()
    view, origin = absolute_memory(struct.layout, 1, "Send")
    sent = bytes(Convertor(struct.layout.description, view, origin, 1).pack_all())
    assert sent == values.tobytes() + index.tobytes()
    values_in, index_in = np.zeros(3), np.zeros(2, np.int32)
    addresses = [MPI.Get_address(values_in), MPI.Get_address(index_in)]
    target = Datatype.Create_struct([3, 2], addresses, [mpi.DOUBLE, mpi.INT]).Commit()
    view, origin = absolute_memory(target.layout, 1, "Recv")
    Convertor(target.layout.description, view, origin, 1).unpack_all(sent)
    assert values_in.tolist() == [1.5, 2.5, 3.5] and index_in.tolist() == [7, 8]
    assert absolute_memory(target.layout, 0, "Recv") == (memoryview(bytearray()), 0)


def test_small_displacements_with_bottom_are_not_addresses():
    from ompy.ompi.datatype.absolute import absolute_memory

    vector = mpi.INT.Create_vector(2, 1, 2).Commit()
    klass, message = error_class(absolute_memory, vector.layout, 1, "Send")
    assert klass == errors.ERR_BUFFER and "MPI.Get_address" in message and "Send" in message


def test_the_predefined_element_of_a_derived_datatype():
    """What a reduction with a predefined operation computes on (None: mixed or no data)."""
    pairs = mpi.DOUBLE_INT.Create_vector(3, 1, 2).Create_resized(0, 100).Dup()
    assert pairs.layout.element_layout() is mpi.DOUBLE_INT.layout
    doubles = Datatype.Create_struct(
        [2, 0, 1], [0, 100, 40], [mpi.DOUBLE, mpi.INT, mpi.DOUBLE.Create_contiguous(3)]
    )
    assert doubles.layout.element_layout() is mpi.DOUBLE.layout
    mixed = Datatype.Create_struct([1, 1], [0, 8], [mpi.DOUBLE, mpi.INT])
    assert mixed.layout.element_layout() is None
    assert mpi.INT.Create_contiguous(0).layout.element_layout() is None
    assert mpi.INT.layout.element_layout() is mpi.INT.layout
    assert Datatype.Create_f90_real(6, 30).layout.element_layout() is mpi.REAL4.layout
    pair = Datatype.Get_value_index(mpi.FLOAT, mpi.SHORT)
    assert pair.Create_contiguous(2).layout.element_layout() is pair.layout


@st.composite
def subarrays(draw):
    ndims = draw(st.integers(1, 3))
    sizes = draw(st.lists(st.integers(1, 5), min_size=ndims, max_size=ndims))
    subsizes = [draw(st.integers(0, size)) for size in sizes]
    starts = [draw(st.integers(0, size - sub)) for size, sub in zip(sizes, subsizes, strict=True)]
    return sizes, subsizes, starts, draw(st.sampled_from([MPI.ORDER_C, MPI.ORDER_FORTRAN]))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(subarrays())
def test_random_subarrays_pack_what_numpy_slicing_selects(comm, args):
    sizes, subsizes, starts, order = args
    test_subarray_packs_what_numpy_slicing_selects(comm, sizes, subsizes, starts, order)


@st.composite
def darrays(draw):
    ndims = draw(st.integers(1, 3))
    gsizes, distribs, dargs, psizes = [], [], [], []
    for _ in range(ndims):
        gsize = draw(st.integers(1, 7))
        distrib = draw(
            st.sampled_from([MPI.DISTRIBUTE_BLOCK, MPI.DISTRIBUTE_CYCLIC, MPI.DISTRIBUTE_NONE])
        )
        psize = 1 if distrib == MPI.DISTRIBUTE_NONE else draw(st.integers(1, 3))
        if distrib == MPI.DISTRIBUTE_BLOCK:
            darg = draw(
                st.sampled_from(
                    [MPI.DISTRIBUTE_DFLT_DARG, -(-gsize // psize) + draw(st.integers(0, 2))]
                )
            )
        elif distrib == MPI.DISTRIBUTE_CYCLIC:
            darg = draw(st.sampled_from([MPI.DISTRIBUTE_DFLT_DARG, draw(st.integers(1, 3))]))
        else:
            darg = MPI.DISTRIBUTE_DFLT_DARG
        gsizes.append(gsize)
        distribs.append(distrib)
        dargs.append(darg)
        psizes.append(psize)
    return gsizes, distribs, dargs, psizes, draw(st.sampled_from([MPI.ORDER_C, MPI.ORDER_FORTRAN]))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(darrays())
def test_random_darrays_share_the_array_as_mpi_defines(comm, args):
    test_darray_packs_each_process_share_as_mpi_defines_it(comm, *args)
