"""The ufunc component: every predefined operation on every datatype MPI allows, in place.

Results are checked against MPI.<OP>(x, y) applied element by element to Python values (the
object forms, which follow MPI's definitions), not against the ufuncs the kernels use.
"""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.mca.op.ufunc import UfuncOpComponent, UfuncOpModule
from ompy.ompi.api.testing import default_instance
from ompy.ompi.datatype import BY_KEY
from ompy.ompi.datatype import predefined as types
from ompy.ompi.instance import default
from ompy.ompi.mca.op import Intrinsic, base
from ompy.ompi.op import LAND, LXOR, MAX, MAXLOC, MINLOC, NO_OP, PREDEFINED, REPLACE, SUM
from ompy.opal.mca.discovery import list_candidates
from ompy.opal.mca.params import Registry

KEYS = sorted({datatype.layout.key for datatype in BY_KEY.values() if datatype})
REDUCTIONS = [op for op in Intrinsic if op not in (Intrinsic.REPLACE, Intrinsic.NO_OP)]
PAIRS = [
    (op, key) for op in REDUCTIONS for key in KEYS if base.allowed(op, BY_KEY[key])
]  # every (operation, datatype) MPI defines a reduction for
COUNTS = (0, 1, 37, 1000)


@pytest.fixture(autouse=True)
def ufunc_only():
    """Reductions in these tests run on the ufunc component and nothing else."""
    with default_instance(Registry(environ={"OMPY_MCA_op": "ufunc"}, files=[])):
        yield


def sample(datatype, count, rng):
    """``count`` elements of ``datatype`` with values every operation can take (no overflow)."""
    dtype = datatype.dtype
    if dtype.fields is not None:
        values = rng.integers(-3, 4, count).astype(dtype["value"])
        out = np.zeros(count, dtype)
        out["value"], out["index"] = values, rng.integers(0, 5, count)
        return out
    if dtype.kind == "b":
        return rng.integers(0, 2, count).astype(bool)
    if dtype.kind == "u":
        return rng.integers(0, 11, count).astype(dtype)
    if dtype.kind == "c":
        return (rng.integers(-5, 6, count) + 1j * rng.integers(-5, 6, count)).astype(dtype)
    if dtype.kind == "f":
        return (rng.integers(-40, 41, count) / 4).astype(dtype)
    return rng.integers(-10, 11, count).astype(dtype)


def reference(op, a, b):
    """``op`` element by element on Python values: what MPI says ``a op b`` is."""
    function = PREDEFINED[op.name]
    if a.dtype.fields is not None:
        return [function(tuple(x), tuple(y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    return [function(x, y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]


def assert_matches(result, expected):
    if result.dtype.fields is not None:
        assert [tuple(x) for x in result.tolist()] == expected
    elif result.dtype.kind in "fc":
        np.testing.assert_allclose(result, np.array(expected, result.dtype), rtol=1e-6)
    else:
        assert result.tolist() == [int(x) if isinstance(x, bool) else x for x in expected]


@pytest.mark.parametrize(("op", "key"), PAIRS, ids=[f"{op.name}-{key}" for op, key in PAIRS])
def test_every_reduction_on_every_allowed_datatype_matches_mpi(op, key):
    datatype = BY_KEY[key]
    rng = np.random.default_rng(abs(hash((op.name, key))) % 2**32)
    for count in COUNTS:
        a, b = sample(datatype, count, rng), sample(datatype, count, rng)
        expected = reference(op, a, b)
        before = a.copy()
        PREDEFINED[op.name].Reduce_local([a, datatype], [b, datatype])
        assert_matches(b, expected)
        assert a.tolist() == before.tolist()  # the input is left alone

        c = sample(datatype, count, rng)  # in place: in and inout are the same memory
        expected = reference(op, c, c)
        PREDEFINED[op.name].Reduce_local([c, datatype], [c, datatype])
        assert_matches(c, expected)


def test_a_count_smaller_than_the_buffer_leaves_the_rest_untouched():
    inout = np.array([1, 2, 3, 4], "i")
    SUM.Reduce_local([np.array([10, 20, 30, 40], "i"), 2, types.INT], [inout, 2, types.INT])
    assert inout.tolist() == [11, 22, 3, 4]


def test_logical_operations_on_integers_give_zero_or_one():
    inout = np.array([0, 5, 0, -7], "i")
    LAND.Reduce_local(np.array([3, 9, 0, 0], "i"), inout)
    assert inout.tolist() == [0, 1, 0, 0]
    inout = np.array([0, 5, 0, -7], "q")
    LXOR.Reduce_local(np.array([3, 9, 0, 0], "q"), inout)
    assert inout.tolist() == [1, 0, 0, 1]


def test_integer_sums_wrap_around_like_c():
    inout = np.array([127, -128], "b")
    SUM.Reduce_local(np.array([1, -1], "b"), inout)
    assert inout.tolist() == [-128, 127]


def test_max_propagates_nan_whichever_side_it_is_on():
    inout = np.array([np.nan, 1.0])
    MAX.Reduce_local(np.array([2.0, np.nan]), inout)
    assert np.isnan(inout).all()


@pytest.mark.parametrize("op", [MAXLOC, MINLOC], ids=["MAXLOC", "MINLOC"])
def test_location_ties_go_to_the_lower_index_on_either_side(op):
    dtype = types.DOUBLE_INT.dtype
    inbuf = np.array([(2.0, 7), (2.0, 3), (5.0, 1), (-5.0, 1)], dtype)
    inout = np.array([(2.0, 4), (2.0, 6), (5.0, 1), (-5.0, 0)], dtype)
    op.Reduce_local(inbuf, inout)
    assert [tuple(x) for x in inout.tolist()][:3] == [(2.0, 4), (2.0, 3), (5.0, 1)]
    assert tuple(inout[3].tolist()) == (-5.0, 0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 9)), max_size=40),
    st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 9)), max_size=40),
    st.integers(1, 7),
    st.sampled_from([Intrinsic.MAXLOC, Intrinsic.MINLOC]),
)
def test_location_kernels_agree_with_mpi_for_any_block_size(xs, ys, block, op):
    count = min(len(xs), len(ys))
    dtype = types.TWOINT.dtype
    a = np.array(xs[:count], dtype)
    b = np.array(ys[:count], dtype)
    expected = reference(op, a, b)
    UfuncOpModule(block).kernel(op, types.TWOINT)(memoryview(a), memoryview(b), count)
    assert [tuple(x) for x in b.tolist()] == expected


def test_replace_and_no_op_serve_one_sided_accumulates():
    target = np.array([1.0, 2.0])
    default().op.accumulate_kernel(REPLACE, types.DOUBLE)(np.array([7.0, 8.0]), target, 2)
    assert target.tolist() == [7.0, 8.0]
    default().op.accumulate_kernel(NO_OP, types.DOUBLE)(np.array([0.0, 0.0]), target, 2)
    assert target.tolist() == [7.0, 8.0]
    pairs = np.array([(1.0, 1)], types.DOUBLE_INT.dtype)
    default().op.accumulate_kernel(REPLACE, types.DOUBLE_INT)(
        np.array([(3.0, 4)], types.DOUBLE_INT.dtype), pairs, 1
    )
    assert tuple(pairs[0].tolist()) == (3.0, 4)


# -- in place, without temporaries ----------------------------------------------------------


def peak_bytes(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("op", "datatype"),
    [(SUM, types.DOUBLE), (LAND, types.INT), (MAXLOC, types.DOUBLE_INT)],
    ids=["SUM-DOUBLE", "LAND-INT", "MAXLOC-DOUBLE_INT"],
)
def test_large_reductions_allocate_nothing_proportional_to_the_message(op, datatype):
    count = 1 << 20
    a = np.zeros(count, datatype.dtype)
    b = np.zeros(count, datatype.dtype)
    run = default().op.kernel(op, datatype)
    run(memoryview(a), memoryview(b), 1)  # warm up numpy's loops
    peak = peak_bytes(lambda: run(memoryview(a), memoryview(b), count))
    assert peak < a.nbytes // 16, f"{peak} bytes allocated for a {a.nbytes}-byte reduction"


# -- the component ------------------------------------------------------------------------------


def test_the_component_is_installed_under_its_entry_point():
    candidates, _ = list_candidates("ompy.mca.op")
    assert "ompy.mca.op.ufunc:UfuncOpComponent" in {
        c.target for c in candidates if c.name == "ufunc"
    }


def test_the_component_registers_its_parameters_and_offers_a_module():
    registry = Registry(environ={"OMPY_MCA_op_ufunc_loc_block": "8"}, files=[])
    component = UfuncOpComponent(registry)
    component.register_params()
    offer = component.query(None)
    assert offer.priority == component.priority == 10
    assert isinstance(offer.module, UfuncOpModule)
    assert offer.module.loc_block == 8


def test_the_module_passes_on_shapes_it_does_not_know():
    module = UfuncOpModule(16)
    assert module.kernel(Intrinsic.SUM, types.DOUBLE_INT) is None
    assert module.kernel(Intrinsic.MAXLOC, types.DOUBLE) is None
