"""A Slurm allocation's variables become nodes with slots; bad variables are named."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from ompy.mca.ras.slurm.allocation import SlurmRasModule, in_allocation, read_allocation
from ompy.mca.ras.slurm.component import SlurmRasComponent
from ompy.opal.mca.params import Registry
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.job import Node
from ompy.orte.mca.ras import AllocationRequest


def test_nodes_get_their_task_counts_as_slots():
    allocation = read_allocation(
        {
            "SLURM_JOB_ID": "42",
            "SLURM_JOB_NODELIST": "n[01-03],gpu7",
            "SLURM_TASKS_PER_NODE": "2(x3),1",
        }
    )
    assert allocation.nodes == (Node("n01", 2), Node("n02", 2), Node("n03", 2), Node("gpu7", 1))
    assert allocation.total_slots == 7
    assert allocation.source == "Slurm job 42 (n[01-03],gpu7)"


def test_the_older_nodelist_variable_is_read_too():
    allocation = read_allocation({"SLURM_NODELIST": "a,b", "SLURM_TASKS_PER_NODE": "3,1"})
    assert allocation.nodes == (Node("a", 3), Node("b", 1))


def test_this_machine_is_named_as_the_launcher_names_it():
    short = socket.gethostname().split(".")[0]
    allocation = read_allocation({"SLURM_JOB_NODELIST": short, "SLURM_TASKS_PER_NODE": "4"})
    assert allocation.nodes == (Node(socket.gethostname(), 4),)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "SLURM_JOB_NODELIST is not set"),
        ({"SLURM_JOB_NODELIST": "n[1-2"}, "SLURM_JOB_NODELIST: hostlist 'n[1-2'"),
        ({"SLURM_JOB_NODELIST": "n[1-2]"}, "SLURM_TASKS_PER_NODE is not set"),
        (
            {"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "2x2"},
            "SLURM_TASKS_PER_NODE: count list '2x2'",
        ),
        (
            {"SLURM_JOB_NODELIST": "n[1-3]", "SLURM_TASKS_PER_NODE": "2(x2)"},
            "gives 2 task counts, but SLURM_JOB_NODELIST='n[1-3]' names 3 nodes",
        ),
        (
            {"SLURM_JOB_NODELIST": "n1,n1", "SLURM_TASKS_PER_NODE": "1,1"},
            "names a node twice",
        ),
        (
            {"SLURM_JOB_NODELIST": "n1,n2", "SLURM_TASKS_PER_NODE": "1,0"},
            "gives node 'n2' no task",
        ),
    ],
)
def test_bad_variables_are_named(environ, message):
    with pytest.raises(LaunchError) as caught:
        read_allocation(environ)
    assert message in str(caught.value)


def test_an_explicit_host_list_leaves_the_choice_to_ras_hostfile():
    module = SlurmRasModule({"SLURM_JOB_NODELIST": "n1", "SLURM_TASKS_PER_NODE": "1"})
    assert module.allocate(AllocationRequest(hosts=("a:2",))) is None
    assert module.allocate(AllocationRequest(hostfile=Path("hosts"))) is None
    assert module.allocate(AllocationRequest()).nodes == (Node("n1", 1),)


def test_the_component_offers_only_inside_an_allocation(monkeypatch):
    component = SlurmRasComponent(Registry(environ={}, files=[]))
    component.register_params()
    component.open()
    for name in ("SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    assert not in_allocation({})
    assert component.query(AllocationRequest()) is None
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-2]")
    monkeypatch.setenv("SLURM_TASKS_PER_NODE", "2(x2)")
    offer = component.query(AllocationRequest())
    assert offer is not None
    assert offer.module.allocate(AllocationRequest()).total_slots == 4
    assert component.query(AllocationRequest(hosts=("x",))) is None
