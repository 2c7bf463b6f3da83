"""Which processors a rank is bound to: the policies, the topology as Linux describes it, and
what a node's rank starter reads from a rank's environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.opal.binding import Topology, bind, cpuset, parse_cpulist

# Two packages of two cores of two hardware threads: processors 0-7, siblings (0,4), (1,5)...
CORES = tuple(frozenset({core, core + 4}) for core in range(4))
PACKAGES = (frozenset({0, 1, 4, 5}), frozenset({2, 3, 6, 7}))
TWO_SOCKETS = Topology(CORES, PACKAGES)


def fake_sysfs(root: Path, siblings: dict[int, tuple[str, str]]) -> Path:
    """A ``/sys/devices/system`` whose processor ``cpu`` has (core list, package list)."""
    for cpu, (core, package) in siblings.items():
        topology = root / "cpu" / f"cpu{cpu}" / "topology"
        topology.mkdir(parents=True)
        (topology / "core_cpus_list").write_text(core + "\n")
        (topology / "package_cpus_list").write_text(package + "\n")
    return root


def test_a_core_each_for_two_ranks_and_a_package_each_beyond():
    assert cpuset("auto", 0, 2, TWO_SOCKETS) == CORES[0]
    assert cpuset("auto", 1, 2, TWO_SOCKETS) == CORES[1]
    assert [cpuset("auto", rank, 4, TWO_SOCKETS) for rank in range(4)] == [
        PACKAGES[0],
        PACKAGES[0],
        PACKAGES[1],
        PACKAGES[1],
    ]


def test_explicit_policies():
    assert cpuset("core", 3, 4, TWO_SOCKETS) == CORES[3]
    assert cpuset("package", 1, 2, TWO_SOCKETS) == PACKAGES[1]
    assert cpuset("none", 0, 2, TWO_SOCKETS) is None


def test_more_ranks_than_cores_are_not_bound_to_cores():
    assert cpuset("core", 0, 5, TWO_SOCKETS) is None
    assert cpuset("auto", 0, 2, Topology((frozenset({0}),), (frozenset({0}),))) is None


def test_an_unknown_policy_is_named():
    with pytest.raises(ValueError, match="unknown binding policy 'socket'"):
        cpuset("socket", 0, 1, TWO_SOCKETS)


@given(st.integers(1, 64), st.integers(1, 8))
def test_package_binding_spreads_ranks_evenly_and_in_order(size, packages):
    topology = Topology((), tuple(frozenset({p}) for p in range(packages)))
    placed = [min(cpuset("package", rank, size, topology) or {-1}) for rank in range(size)]
    assert placed == sorted(placed)  # consecutive ranks share a package
    counts = [placed.count(p) for p in range(packages) if p in placed]
    assert max(counts) - min(counts) <= 1
    assert len(counts) == min(size, packages)


def test_the_topology_is_read_from_sysfs_and_restricted_to_usable_processors(tmp_path):
    root = fake_sysfs(
        tmp_path,
        {
            cpu: (f"{cpu % 4},{cpu % 4 + 4}", "0-1,4-5" if cpu % 4 < 2 else "2-3,6-7")
            for cpu in range(8)
        },
    )
    assert Topology.read(range(8), root) == TWO_SOCKETS
    assert Topology.read({0, 1, 4}, root) == Topology(
        (frozenset({0, 4}), frozenset({1})), (frozenset({0, 1, 4}),)
    )


def test_an_undescribed_processor_is_a_core_and_a_package_of_its_own(tmp_path):
    assert Topology.read({0, 1}, tmp_path) == Topology(
        (frozenset({0}), frozenset({1})), (frozenset({0}), frozenset({1}))
    )


def test_binding_a_process_confines_it_and_none_leaves_it():
    before = os.sched_getaffinity(0)
    one = min(before)
    pid = os.fork()
    if pid == 0:  # a child, so that this process keeps its processors
        bind(0, None)
        unchanged = os.sched_getaffinity(0) == before
        bind(0, frozenset({one}))
        os._exit(0 if unchanged and os.sched_getaffinity(0) == {one} else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_cpu_lists_as_the_kernel_writes_them():
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("") == []
