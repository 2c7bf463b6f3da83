"""Group: ranks, set operations, translation and comparison, with MPI's rules for bad ranks."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.api.testing import make_world, no_default_instance
from ompy.ompi.constants import IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL
from ompy.ompi.group import GROUP_EMPTY, GROUP_NULL, Group
from ompy.ompi.instance import adopted

WORLD = ("p0", "p1", "p2", "p3", "p4", "p5")


def world(local="p2"):
    return Group.from_procs(WORLD, local)


def procs(group):
    return group.procs if group != GROUP_EMPTY else ()


def mpi_error(call, *args):
    with pytest.raises(errors.Exception) as info:
        call(*args)
    return info.value.Get_error_class()


def test_size_and_rank():
    group = world()
    assert group.Get_size() == group.size == 6
    assert group.Get_rank() == group.rank == 2
    assert Group.from_procs(WORLD, "elsewhere").Get_rank() == UNDEFINED
    assert GROUP_EMPTY.Get_size() == 0 and GROUP_EMPTY.Get_rank() == UNDEFINED


def test_incl_keeps_the_order_given_and_excl_the_group_order():
    group = world()
    included = group.Incl([4, 2, 0])
    assert procs(included) == ("p4", "p2", "p0")
    assert included.Get_rank() == 1
    assert procs(group.Excl([0, 4])) == ("p1", "p2", "p3", "p5")
    assert group.Excl([0, 1, 3, 4, 5]).Get_rank() == 0


def test_empty_results_are_group_empty():
    group = world()
    assert group.Incl([]) == GROUP_EMPTY
    assert group.Excl(range(6)) == GROUP_EMPTY
    assert Group.Intersection(group.Incl([0]), group.Incl([1])) == GROUP_EMPTY


def test_range_incl_and_excl():
    group = world()
    assert procs(group.Range_incl([(0, 4, 2), (5, 5, 1)])) == ("p0", "p2", "p4", "p5")
    assert procs(group.Range_incl([(5, 1, -2)])) == ("p5", "p3", "p1")
    assert procs(group.Range_excl([(0, 5, 2)])) == ("p1", "p3", "p5")


def test_range_errors():
    group = world()
    assert mpi_error(group.Range_incl, [(0, 4, 0)]) == errors.ERR_ARG
    assert mpi_error(group.Range_incl, [(4, 0, 1)]) == errors.ERR_ARG
    assert mpi_error(group.Range_incl, [(0, 6, 1)]) == errors.ERR_RANK
    assert mpi_error(group.Range_incl, [(0, 2, 1), (2, 3, 1)]) == errors.ERR_RANK
    with pytest.raises(TypeError, match="triplet"):
        group.Range_incl([(0, 1)])


def test_bad_ranks_are_mpi_rank_errors_that_name_the_rank():
    group = world()
    with pytest.raises(errors.Exception, match="rank 6 is not in a group of size 6") as info:
        group.Incl([6])
    assert info.value.Get_error_class() == errors.ERR_RANK
    assert mpi_error(group.Incl, [-1]) == errors.ERR_RANK
    assert mpi_error(group.Incl, [1, 1]) == errors.ERR_RANK
    assert mpi_error(group.Excl, [2, 2]) == errors.ERR_RANK
    with pytest.raises(TypeError, match="every rank must be an int"):
        group.Incl([0.5])
    with pytest.raises(TypeError, match="sequence of ranks"):
        group.Incl(3)


def test_union_intersection_difference_follow_mpi_order():
    group = world()
    a, b = group.Incl([3, 1, 2]), group.Incl([2, 5, 1, 0])
    assert procs(Group.Union(a, b)) == ("p3", "p1", "p2", "p5", "p0")
    assert procs(Group.Intersection(a, b)) == ("p1", "p2")
    assert procs(Group.Intersect(a, b)) == ("p1", "p2")  # mpi4py's other name
    assert procs(Group.Difference(a, b)) == ("p3",)
    assert Group.Union(a, b).Get_rank() == 2


def test_translate_ranks():
    group = world()
    sub = group.Incl([5, 3, 1])
    assert sub.Translate_ranks([0, 1, 2], group) == [5, 3, 1]
    assert group.Translate_ranks([1, 2, 3, PROC_NULL], sub) == [2, UNDEFINED, 1, PROC_NULL]
    assert sub.Translate_ranks(None, group) == [5, 3, 1]
    # mpi4py 3 style, on the class: Group.Translate_ranks(group1, ranks1, group2)
    assert Group.Translate_ranks(sub, [0], group) == [5]
    assert mpi_error(sub.Translate_ranks, [3], group) == errors.ERR_RANK


def test_translate_ranks_defaults_to_the_world_group():
    instance = make_world(6)[2]._c.instance
    sub = instance.world_group.Incl([4, 0])
    with no_default_instance(), pytest.raises(errors.Exception, match="pass the target group"):
        sub.Translate_ranks([0])
    with adopted(instance):  # the default instance's world group: world ranks 0-5
        assert sub.Translate_ranks() == [4, 0]


def test_compare():
    group = world()
    assert group.Compare(group) == IDENT
    assert group.Compare(group.Dup()) == IDENT
    assert Group.Compare(group.Incl([0, 1]), group.Incl([1, 0])) == SIMILAR
    assert group.Compare(group.Incl([0, 1])) == UNEQUAL


def test_handles_dup_and_free():
    group = world()
    handle = Group(group)
    assert handle == group
    dup = group.Dup()
    assert dup != group and procs(dup) == procs(group)
    dup.Free()
    assert dup == GROUP_NULL and not dup
    assert mpi_error(dup.Get_size) == errors.ERR_GROUP
    assert mpi_error(GROUP_EMPTY.Free) == errors.ERR_GROUP
    assert mpi_error(Group.Union, GROUP_NULL, group) == errors.ERR_GROUP


def test_a_group_lists_each_process_once():
    with pytest.raises(ValueError, match="repeated: 'p1'"):
        Group.from_procs(["p1", "p2", "p1"], None)


@given(
    st.lists(st.integers(0, 9), unique=True),
    st.lists(st.integers(0, 9), unique=True),
)
def test_set_operations_agree_with_python_sets(first, second):
    group = Group.from_procs(range(10), 0)
    a, b = group.Incl(first), group.Incl(second)
    union = procs(Group.Union(a, b))
    assert set(union) == set(first) | set(second)
    assert list(union[: len(first)]) == first
    assert list(procs(Group.Intersection(a, b))) == [p for p in first if p in second]
    assert list(procs(Group.Difference(a, b))) == [p for p in first if p not in second]
    back = a.Translate_ranks(range(len(first)), group)
    assert back == first
