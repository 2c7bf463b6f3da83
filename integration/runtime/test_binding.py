"""``ompy run`` binds ranks as mpirun does: a core each for up to two ranks on a node, nothing
on an oversubscribed node, and what ``--bind-to`` / ``orte_bind_to`` ask for."""

from __future__ import annotations

import os
import sys

import pytest

pytestmark = pytest.mark.timeout(120)

# Each rank prints its rank and the processors it may run on, e.g. "1 3,7".
PROGRAM = [
    sys.executable,
    "-c",
    "import os; from ompy import MPI; "
    "print(MPI.COMM_WORLD.Get_rank(), ','.join(map(str, sorted(os.sched_getaffinity(0)))))",
]
USABLE = sorted(os.sched_getaffinity(0))


def bindings(ompy, *options: str, env: dict[str, str] | None = None) -> dict[int, set[int]]:
    result = ompy.run(["-q", *options, *PROGRAM], env=env)
    assert result.returncode == 0, result.stderr
    found: dict[int, set[int]] = {}
    for line in result.stdout.splitlines():
        rank, cpus = line.split()
        found[int(rank)] = {int(cpu) for cpu in cpus.split(",")}
    return found


@pytest.mark.skipif(len(USABLE) < 2, reason="needs two usable processors")
def test_two_ranks_get_a_core_each_by_default(ompy):
    found = bindings(ompy, "-n", "2")
    assert sorted(found) == [0, 1]
    assert found[0].isdisjoint(found[1])
    assert all(cpus < set(USABLE) for cpus in found.values())


@pytest.mark.skipif(len(USABLE) < 2, reason="needs two usable processors")
def test_the_policy_comes_from_the_option_or_the_parameter(ompy):
    assert bindings(ompy, "-n", "2", "--bind-to", "none") == {0: set(USABLE), 1: set(USABLE)}
    unbound = bindings(ompy, "-n", "2", env={"OMPY_MCA_orte_bind_to": "none"})
    assert unbound == {0: set(USABLE), 1: set(USABLE)}
    # The option wins over the parameter, as the command line does everywhere.
    bound = bindings(ompy, "-n", "2", "--bind-to", "core", env={"OMPY_MCA_orte_bind_to": "none"})
    assert bound[0].isdisjoint(bound[1])


def test_an_oversubscribed_node_is_not_bound(ompy):
    size = len(USABLE) + 1
    found = bindings(ompy, "-n", str(size), "--oversubscribe", "--bind-to", "core")
    assert found == {rank: set(USABLE) for rank in range(size)}


def test_a_bad_policy_is_one_message(ompy):
    result = ompy.run(["-n", "1", "--bind-to", "socket", *PROGRAM])
    assert result.returncode == 2
    assert "'socket' is not one of 'auto', 'none', 'core', 'package'" in result.stderr
    result = ompy.run(["-n", "1", *PROGRAM], env={"OMPY_MCA_orte_bind_to": "socket"})
    assert result.returncode == 1
    assert "orte_bind_to" in result.stderr and "auto, none, core, package" in result.stderr
