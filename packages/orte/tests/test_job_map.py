"""The job map in the launch environment: every rank's node, so MPI needs no modex for it."""

from __future__ import annotations

import secrets

import pytest

from ompy.orte.control import LaunchEnvironmentError, environment_for_rank
from ompy.orte.control.environment import (
    NODE_NAMES,
    RANK_NODES,
    decode_rank_nodes,
    encode_rank_nodes,
    identity_from_environment,
)

SECRET = secrets.token_bytes(32)
#: Ranks 0, 1, 4 on node 0 ("a"), ranks 2, 3 on node 1 ("b").
RANK_NODE_IDS = (0, 0, 1, 1, 0)


def launched(rank: int = 3, **changes) -> dict[str, str]:
    fields = dict(
        jobid="j1",
        rank=rank,
        size=5,
        local_rank=RANK_NODE_IDS[:rank].count(RANK_NODE_IDS[rank]),
        local_size=RANK_NODE_IDS.count(RANK_NODE_IDS[rank]),
        node_id=RANK_NODE_IDS[rank],
        node_name="ab"[RANK_NODE_IDS[rank]],
        server=("127.0.0.1", 40123),
        secret=SECRET,
        oversubscribed=False,
        session_dir="/tmp/ompy-j1",
        rank_nodes=RANK_NODE_IDS,
        node_names=("a", "b"),
    )
    fields.update(changes)
    return environment_for_rank(**fields)


def identify(env):
    return identity_from_environment(env)


@pytest.mark.parametrize(
    ("nodes", "text"),
    [((0,), "0"), ((0, 0, 0, 0), "0*4"), ((0, 0, 1, 1, 0), "0*2,1*2,0"), ((3, 12), "3,12")],
)
def test_rank_nodes_are_run_length_encoded(nodes, text):
    assert encode_rank_nodes(nodes) == text
    assert decode_rank_nodes(text) == nodes


def test_the_job_map_travels_in_the_environment():
    env = launched()
    assert env[NODE_NAMES] == "a,b" and env[RANK_NODES] == "0*2,1*2,0"
    identity = identify(env)
    assert identity.rank_nodes == RANK_NODE_IDS and identity.node_names == ("a", "b")
    assert [identity.local_rank_of(rank) for rank in range(5)] == [0, 1, 0, 1, 2]


def test_without_a_job_map_the_identity_has_none():
    env = launched()
    del env[NODE_NAMES], env[RANK_NODES]
    assert identify(env).rank_nodes == ()


@pytest.mark.parametrize("missing", [NODE_NAMES, RANK_NODES])
def test_half_a_job_map_is_refused(missing):
    env = launched()
    del env[missing]
    with pytest.raises(LaunchEnvironmentError, match="both or neither"):
        identify(env)


@pytest.mark.parametrize("value", ["", "0,,1", "x", "0*", "0*-1", "1*2*3"])
def test_a_malformed_rank_node_list_names_the_variable(value):
    env = launched()
    env[RANK_NODES] = value
    with pytest.raises(LaunchEnvironmentError, match=RANK_NODES):
        identify(env)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0*5", "not on node 1"),  # this rank is on node 1
        ("0*2,1*2", "names 4 ranks"),
        ("0*2,1*2,2", "node ids must be 0..1"),
        ("0,1*3,0", "local rank or local size"),
    ],
)
def test_a_job_map_that_contradicts_the_identity_is_refused(value, message):
    env = launched()
    env[RANK_NODES] = value
    with pytest.raises(LaunchEnvironmentError, match=message):
        identify(env)
