"""Mapping ranks onto nodes: --map-by slot and node, oversubscription, local numbering."""

from __future__ import annotations

import pytest

from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.job import Allocation, Node
from ompy.orte.launcher.mapping import map_ranks

TWO_NODES = Allocation((Node("a", 2), Node("b", 3)), "--host")


def nodes_of(job_map):
    return [p.node.name for p in job_map.placements]


def test_map_by_slot_fills_each_node_before_the_next():
    job_map = map_ranks(4, TWO_NODES, "slot")
    assert nodes_of(job_map) == ["a", "a", "b", "b"]
    assert [p.local_rank for p in job_map.placements] == [0, 1, 0, 1]
    assert [p.node_id for p in job_map.placements] == [0, 0, 1, 1]
    assert not job_map.oversubscribed


def test_map_by_node_deals_round_robin_and_skips_full_nodes():
    job_map = map_ranks(5, TWO_NODES, "node")
    assert nodes_of(job_map) == ["a", "b", "a", "b", "b"]
    assert [p.local_size for p in job_map.placements] == [2, 3, 2, 3, 3]


def test_more_ranks_than_slots_wrap_around_and_are_marked():
    job_map = map_ranks(7, TWO_NODES, "slot")
    assert nodes_of(job_map) == ["a", "a", "b", "b", "b", "a", "b"]
    assert job_map.oversubscribed
    assert all(p.oversubscribed for p in job_map.placements)


def test_more_ranks_than_cores_is_oversubscribed_even_with_enough_slots():
    one = Allocation((Node("here", 8),), "--host")
    job_map = map_ranks(4, one, cores=2)
    assert not job_map.oversubscribed  # the slots allow it: no warning
    assert all(p.oversubscribed for p in job_map.placements)  # but ranks must yield


def test_unused_nodes_take_no_node_id():
    job_map = map_ranks(2, TWO_NODES, "slot")
    assert {p.node_id for p in job_map.placements} == {0}


@pytest.mark.parametrize(("size", "policy"), [(0, "slot"), (2, "core")])
def test_bad_requests_are_refused(size, policy):
    with pytest.raises(LaunchError):
        map_ranks(size, TWO_NODES, policy)
