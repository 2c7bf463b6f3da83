"""Planning a spawned job from the allocation: placement by slot, the host/wdir/env keys,
local ranks across applications, oversubscription marks and refusals that name the problem."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.orte.control.errors import SpawnError
from ompy.orte.launcher.job import Allocation, Node
from ompy.orte.launcher.spawned import plan_spawn

ALLOCATION = Allocation((Node("alpha", 2), Node("beta", 2)), "--host")
PYTHON = [sys.executable, "-c", "pass"]


def app(count: int, **extra) -> dict:
    return {"argv": PYTHON, "maxprocs": count, **extra}


def test_ranks_fill_the_slots_in_order_and_number_local_ranks_per_node(tmp_path):
    ranks = plan_spawn([app(3)], ALLOCATION, tmp_path, {}, {})
    assert [(r.placement.rank, r.placement.node.name, r.placement.local_rank) for r in ranks] == [
        (0, "alpha", 0),
        (1, "alpha", 1),
        (2, "beta", 0),
    ]
    assert [r.placement.local_size for r in ranks] == [2, 2, 1]
    assert [r.placement.node_id for r in ranks] == [0, 0, 1]
    assert all(r.argv == tuple(PYTHON) and r.cwd == tmp_path for r in ranks)


def test_each_application_keeps_its_host_wdir_and_env(tmp_path):
    (tmp_path / "sub").mkdir()
    apps = [app(1, host="beta", env={"A": "1"}), app(2, wdir="sub", host="beta")]
    ranks = plan_spawn(apps, ALLOCATION, tmp_path, {}, {})
    assert [r.placement.node.name for r in ranks] == ["beta"] * 3
    assert [r.placement.local_rank for r in ranks] == [0, 1, 2]  # across both applications
    assert [r.env for r in ranks] == [{"A": "1"}, {}, {}]
    assert [r.cwd for r in ranks] == [tmp_path, tmp_path / "sub", tmp_path / "sub"]
    # three ranks on beta's two slots: oversubscribed
    assert all(r.placement.oversubscribed for r in ranks)


def test_ranks_already_running_on_a_host_count_for_oversubscription(tmp_path):
    (rank,) = plan_spawn([app(1, host="alpha")], ALLOCATION, tmp_path, {}, {"alpha": 1})
    assert not rank.placement.oversubscribed
    (rank,) = plan_spawn([app(1, host="alpha")], ALLOCATION, tmp_path, {}, {"alpha": 2})
    assert rank.placement.oversubscribed


@pytest.mark.parametrize(
    ("apps", "message"),
    [
        ([], "no application given"),
        ([app(0)], "maxprocs must be at least 1, got 0"),
        ([{"argv": PYTHON, "maxprocs": True}], "maxprocs must be int"),
        ([app(1, host="gamma")], "host 'gamma' is not in the allocation \\(alpha, beta\\)"),
        ([app(1, wdir="/no/such/dir")], "the working directory '/no/such/dir' does not exist"),
        ([{"argv": ["/no/such/program"], "maxprocs": 1}], "/no/such/program"),
        ([app(1, env=["A=1"])], "env must be a map"),
        (["python"], "application 0 is not a map"),
    ],
)
def test_a_request_that_cannot_be_honoured_is_refused_before_anything_starts(
    tmp_path, apps, message
):
    with pytest.raises(SpawnError, match=message):
        plan_spawn(apps, ALLOCATION, tmp_path, {}, {})


@given(st.lists(st.integers(1, 5), min_size=1, max_size=4))
def test_local_ranks_are_unique_and_dense_per_node_whatever_the_applications(counts):
    ranks = plan_spawn([app(n) for n in counts], ALLOCATION, Path.cwd(), {}, {})
    assert [r.placement.rank for r in ranks] == list(range(sum(counts)))
    for name in ("alpha", "beta"):
        mine = [r.placement for r in ranks if r.placement.node.name == name]
        assert [p.local_rank for p in mine] == list(range(len(mine)))
        assert all(p.local_size == len(mine) for p in mine)
