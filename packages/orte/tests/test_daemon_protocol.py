"""The daemon's launch record, its messages and the tree of daemons, without processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.orte.control import wire
from ompy.orte.daemon import agent, protocol
from ompy.orte.daemon.main import read_launch_info
from ompy.orte.daemon.protocol import DaemonProtocolError, LaunchInfo, NodeTree
from ompy.orte.daemon.tree import daemon_tree

INFO = LaunchInfo(
    "launch1",
    bytes(range(32)),
    "",
    4242,
    NodeTree(3, "h3", (NodeTree(5, "h5"),)),
    ("ssh", "-F", "/etc/cfg with space"),
    "/opt/python3",
)


def test_the_launch_record_round_trips_through_a_pipe_and_leaves_the_rest_unread():
    read_end, write_end = os.pipe()
    os.write(write_end, wire.encode(INFO.to_wire()) + b"after")
    os.close(write_end)
    assert read_launch_info(read_end) == INFO
    assert os.read(read_end, 100) == b"after"
    os.close(read_end)


def test_a_record_for_every_daemon_of_a_step_names_the_node_variable():
    shared = LaunchInfo(
        "l", bytes(32), "10.0.0.1", 1, NodeTree(-1, ""), (), "/py", node_variable="SLURM_NODEID"
    )
    assert LaunchInfo.from_wire(shared.to_wire()) == shared
    assert LaunchInfo.from_wire({**INFO.to_wire(), "node_variable": ""}) == INFO


def test_the_secret_is_not_in_the_records_repr():
    assert bytes(range(32)).hex() not in repr(INFO) and "secret" not in repr(INFO)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"secret": b"short"}, "'secret'"),
        ({"launcher_port": 0}, "'launcher_port'"),
        ({"agent": "ssh"}, "'agent'"),
        ({"tree": {"node": "1", "name": "h", "children": []}}, "node is malformed"),
    ],
)
def test_a_malformed_launch_record_is_refused_by_name(change, message):
    with pytest.raises(DaemonProtocolError, match=message):
        LaunchInfo.from_wire({**INFO.to_wire(), **change})


def test_messages_are_checked_by_direction_and_field():
    spawn = {"op": "spawn", "rank": 1, "argv": ["a"], "env": {}, "cwd": "/", "stdin": False}
    assert protocol.check(spawn, protocol.FROM_LAUNCHER) == "spawn"
    with pytest.raises(DaemonProtocolError, match="unexpected daemon message 'spawn'"):
        protocol.check(spawn, protocol.FROM_DAEMON)
    with pytest.raises(DaemonProtocolError, match="bad 'env'"):
        protocol.check({**spawn, "env": {"A": 1}}, protocol.FROM_LAUNCHER)
    warm = {"op": "warm", "argv": ["python", "-c", "pass"], "env": {"A": "b"}, "cwd": "/"}
    assert protocol.check(warm, protocol.FROM_LAUNCHER) == "warm"
    with pytest.raises(DaemonProtocolError, match="unexpected daemon message 'warm'"):
        protocol.check(warm, protocol.FROM_DAEMON)
    with pytest.raises(DaemonProtocolError, match="bad 'argv'"):
        protocol.check({**warm, "argv": "python"}, protocol.FROM_LAUNCHER)
    with pytest.raises(DaemonProtocolError, match="lacks the field 'fd'"):
        protocol.check({"op": "output", "rank": 0, "data": b""}, protocol.FROM_DAEMON)


def test_a_launch_message_carries_every_rank_and_is_checked_item_by_item():
    item = {"rank": 0, "env": {"OMPY_RANK": "0"}, "unset": [], "stdin": True}
    launch = {"op": "launch", "argv": ["a"], "env": {"A": "b"}, "cwd": "/", "ranks": [item]}
    assert protocol.check(launch, protocol.FROM_LAUNCHER) == "launch"
    assert protocol.check({**launch, "ranks": []}, protocol.FROM_LAUNCHER) == "launch"
    with pytest.raises(DaemonProtocolError, match="unexpected daemon message 'launch'"):
        protocol.check(launch, protocol.FROM_DAEMON)
    bad_items = [
        {**item, "rank": True},
        {**item, "env": {"A": 1}},
        {**item, "unset": "A"},
        {**item, "stdin": 1},
        {k: v for k, v in item.items() if k != "unset"},
        {**item, "extra": 1},
        "rank 0",
    ]
    for bad in bad_items:
        with pytest.raises(DaemonProtocolError, match="bad 'ranks'"):
            protocol.check({**launch, "ranks": [item, bad]}, protocol.FROM_LAUNCHER)


_names = st.text("ABCDEFGHIJ_", min_size=1, max_size=3)
_envs = st.dictionaries(_names, st.text(max_size=4), max_size=8)


@given(common=_envs, env=_envs)
def test_a_rank_environment_is_rebuilt_exactly_from_its_difference_to_the_common_one(common, env):
    item = protocol.env_difference(common, env)
    assert protocol.rank_env(common, item) == env
    assert set(item["env"]) <= set(env)  # only what the rank adds or changes travels
    assert all(common.get(name) != value for name, value in item["env"].items())
    assert set(item["unset"]) == set(common) - set(env)


def test_the_remote_command_quotes_every_word_and_holds_no_secret():
    argv = agent.daemon_argv(INFO, "h3")
    assert argv == ["ssh", "-F", "/etc/cfg with space", "h3", "/opt/python3 -m ompy.orte.daemon"]
    assert agent.daemon_argv(INFO, None) == ["/opt/python3", "-m", "ompy.orte.daemon"]


def test_the_daemon_refuses_to_run_without_a_launch_record():
    done = subprocess.run(
        [sys.executable, "-m", "ompy.orte.daemon"],
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert b"cannot read the launch record" in done.stderr


def flatten(trees):
    for tree in trees:
        yield tree
        yield from flatten(tree.children)


def depth(trees):
    return max((1 + depth(t.children) for t in trees), default=0)


@given(st.integers(0, 300), st.integers(1, 40))
def test_the_tree_starts_every_node_once_within_the_fanout_and_log_depth(count, fanout):
    nodes = [(index, f"n{index}") for index in range(count)]
    trees = daemon_tree(nodes, fanout)
    started = [(t.node, t.name) for t in flatten(trees)]
    assert sorted(started) == nodes
    assert len(trees) == min(count, fanout)
    assert all(len(t.children) <= fanout for t in flatten(trees))
    levels, reach = 0, 0
    while reach < count:  # a full tree of this fan-out needs this many levels
        levels += 1
        reach += fanout**levels
    assert depth(trees) == levels


def test_a_fanout_below_one_is_an_error():
    with pytest.raises(ValueError, match="at least 1"):
        daemon_tree([(0, "a")], 0)


def test_a_daemon_started_as_a_module_does_not_import_the_command_line_tools():
    """Every remote host pays a daemon's imports on the launch's critical path: the module
    launchers run (``python -m ompy.orte.daemon``) must not load click."""
    code = (
        "import sys\n"
        "import ompy.orte.daemon.launch, ompy.orte.daemon.node\n"
        "print(sorted(m for m in sys.modules if m == 'click' or m.startswith('click.')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
