"""plm slurm: the srun command, the step's record and each daemon's part, when it offers."""

from __future__ import annotations

import pytest

from ompy.mca.plm.slurm.component import SlurmPlmComponent, allocation_nodes
from ompy.mca.plm.slurm.launcher import SlurmPlmModule, SlurmSettings, srun_argv
from ompy.mca.plm.slurm.node_daemon import read_frame
from ompy.mca.plm.slurm.record import node_record, step_record
from ompy.opal.mca.params import Registry
from ompy.orte.control import wire
from ompy.orte.daemon.protocol import DaemonProtocolError, LaunchInfo, NodeTree
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.hosts import local_host_name
from ompy.orte.launcher.job import Node

INFO = LaunchInfo("l1", b"s" * 32, "", 4000, NodeTree(0, ""), (), "/usr/bin/python3")


def test_one_srun_step_starts_one_daemon_per_node_with_nothing_secret_in_argv():
    argv = srun_argv("srun", ["n1", "n2", "n3"], "/py", ["--partition=x"])
    assert argv[0] == "srun"
    assert {"--nodes=3", "--ntasks=3", "--ntasks-per-node=1", "--nodelist=n1,n2,n3"} <= set(argv)
    assert "--input=all" in argv  # the record reaches every daemon on its stdin
    assert argv[-4:] == ["--partition=x", "/py", "-m", "ompy.mca.plm.slurm.node_daemon"]
    assert all("s" * 32 not in word for word in argv)


def test_each_daemon_takes_its_node_from_slurm_and_the_launcher_address():
    frame = step_record(INFO, {"n1": 0, "n2": 1})
    info = node_record(frame, {"SLURMD_NODENAME": "n2", "SLURM_LAUNCH_NODE_IPADDR": "10.0.0.9"})
    assert info.tree == NodeTree(1, "n2")
    assert (info.launcher_host, info.launcher_port, info.secret) == ("10.0.0.9", 4000, b"s" * 32)
    given = step_record(LaunchInfo("l1", b"s" * 32, "h", 1, NodeTree(0, ""), (), "p"), {"a": 0})
    assert node_record(given, {"SLURMD_NODENAME": "a"}).launcher_host == "h"


@pytest.mark.parametrize(
    ("frame", "environ", "message"),
    [
        ({"launch": INFO.to_wire()}, {"SLURMD_NODENAME": "n1"}, "no node table"),
        ({"nodes": {"n1": 0}}, {"SLURMD_NODENAME": "n1"}, "no launch record"),
        (step_record(INFO, {"n1": 0}), {"SLURMD_NODENAME": "n9"}, "'n9' is not one of"),
        (step_record(INFO, {"n1": 0}), {}, "SLURMD_NODENAME='' is not one of"),
    ],
)
def test_a_bad_record_or_node_is_named(frame, environ, message):
    with pytest.raises(DaemonProtocolError, match=message):
        node_record(frame, environ)


def test_the_record_is_read_as_one_frame_leaving_the_rest_of_stdin(tmp_path):
    import os

    read_fd, write_fd = os.pipe()
    os.write(write_fd, wire.encode(step_record(INFO, {"n1": 0})) + b"more")
    assert read_frame(read_fd)["nodes"] == {"n1": 0}
    assert os.read(read_fd, 4) == b"more"
    os.close(write_fd)
    with pytest.raises(DaemonProtocolError, match="ended before"):
        read_frame(read_fd)
    os.close(read_fd)


@pytest.fixture
def component():
    component = SlurmPlmComponent(Registry(environ={}, files=[]))
    component.register_params()
    component.open()
    return component


def test_it_offers_only_for_other_nodes_of_the_allocation(component, monkeypatch):
    for name in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        monkeypatch.delenv(name, raising=False)
    nodes = [Node("n1", 2), Node("n2", 2)]
    assert component.query(nodes) is None  # not in an allocation
    monkeypatch.setenv("SLURM_JOB_ID", "5")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-2]")
    assert allocation_nodes({"SLURM_JOB_ID": "5", "SLURM_JOB_NODELIST": "n[1-2]"}) == {"n1", "n2"}
    offer = component.query(nodes)
    assert offer is not None and isinstance(offer.module, SlurmPlmModule)
    assert offer.priority == 30  # above plm ssh (20)
    assert component.query([Node(local_host_name(), 4)]) is None  # plm local's job
    assert component.query([Node("n1", 1), Node("elsewhere", 1)]) is None


def test_a_missing_srun_is_named():
    settings = SlurmSettings(
        agent=(),
        python="/py",
        launcher_host="",
        connect_timeout=1.0,
        connect_timeout_param="plm_slurm_connect_timeout",
        srun="no-such-srun-here",
    )
    module = SlurmPlmModule(settings)
    with pytest.raises(LaunchError, match="'no-such-srun-here' was not found"):
        module.check_nodes([Node("n1", 1)])
