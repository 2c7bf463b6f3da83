"""The target's lock table: MPI's exclusion rules, grants in arrival order, nobody starved."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ompy.mca.osc.pt2pt.locks import LockTable
from ompy.ompi.mca.osc import LOCK_EXCLUSIVE, LOCK_SHARED


@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from([LOCK_EXCLUSIVE, LOCK_SHARED]))))
def test_grants_follow_arrival_order_and_exclusion(requests):
    table = LockTable()
    holders: list[tuple[int, int, int]] = []  # (origin, ident, type) in grant order
    granted_order: list[int] = []
    types = {}
    for ident, (origin, lock_type) in enumerate(requests):
        types[ident] = (origin, lock_type)
        for _, got in table.request(origin, ident, lock_type):
            granted_order.append(got)
            holders.append((*types[got][:1], got, types[got][1]))
        # MPI's rule: an exclusive holder is alone
        kinds = [kind for _, _, kind in holders]
        assert LOCK_EXCLUSIVE not in kinds or len(kinds) == 1
        # release the oldest holder now and then, as an Unlock would
        if holders and ident % 2:
            origin_done, _, _ = holders.pop(0)
            for _, got in table.release(origin_done):
                granted_order.append(got)
                holders.append((types[got][0], got, types[got][1]))
    while holders:  # everyone unlocks: every request is granted in the end
        origin_done, _, _ = holders.pop(0)
        for _, got in table.release(origin_done):
            granted_order.append(got)
            holders.append((types[got][0], got, types[got][1]))
    assert granted_order == list(range(len(requests)))


def test_a_waiting_exclusive_lock_holds_back_later_shared_ones():
    table = LockTable()
    assert table.request(0, 1, LOCK_SHARED) == [(0, 1)]
    assert table.request(1, 2, LOCK_EXCLUSIVE) == []
    assert table.request(2, 3, LOCK_SHARED) == []  # behind the exclusive request
    assert table.release(0) == [(1, 2)]
    assert table.release(1) == [(2, 3)]


def test_releasing_a_lock_not_held_is_an_error():
    table = LockTable()
    try:
        table.release(3)
    except ValueError as error:
        assert "rank 3" in str(error)
    else:
        raise AssertionError("release of a lock nobody holds was accepted")
