"""The tree walk shared by the binomial gather, scatter and scatterv schedules."""

from hypothesis import given
from hypothesis import strategies as st

from ompy.mca.coll.tuned.util import Subtree

places = st.integers(1, 300).flatmap(
    lambda size: st.tuples(st.just(size), st.integers(0, size - 1), st.integers(0, size - 1))
)


@given(places)
def test_the_childrens_runs_tile_a_subtree_after_the_ranks_own_block(place):
    size, root, rank = place
    tree = Subtree.of(rank, root, size)
    position = 1  # position 0 is this rank's own block
    for first, stop in sorted((first, stop) for _child, first, stop in tree.runs):
        assert first == position < stop
        position = stop
    assert position == tree.span
    assert (tree.parent is None) == (rank == root)


@given(places)
def test_each_child_owns_the_run_given_to_it_and_answers_to_this_rank(place):
    size, root, rank = place
    for child, first, stop in Subtree.of(rank, root, size).runs:
        below = Subtree.of(child, root, size)
        assert below.span == stop - first
        assert below.parent == rank


@given(st.integers(1, 300).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1))))
def test_the_roots_subtree_is_the_whole_communicator(place):
    size, root = place
    assert Subtree.of(root, root, size).span == size
