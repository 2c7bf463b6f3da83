"""Ports, published names and Connect/Accept between two jobs of one launcher; Spawn_multiple
with per-application info (env, wdir); Comm.Join over a socket."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"

pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize("btl", ["self,sm,tcp", "self,tcp"])
def test_two_spawned_jobs_meet_through_a_published_port(ompy, btl):
    result = ompy.run(
        ["--mca", "btl", btl, "-n", "1", sys.executable, str(PROGRAMS / "ports.py")],
        timeout=200,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    root = [r for r in reports if r["role"] == "root"]
    servers = sorted((r for r in reports if r["role"] == "server"), key=lambda r: r["rank"])
    clients = sorted((r for r in reports if r["role"] == "client"), key=lambda r: r["rank"])
    assert root == [{"role": "root", "done": ["server", "client"]}]
    assert [r["rank"] for r in servers] == [0, 1] and [r["rank"] for r in clients] == [0, 1, 2]
    for report in servers:
        assert report["remote_size"] == 3
        assert report["gathered"] == [["client", 0], ["client", 1], ["client", 2]]
    for report in clients:
        assert report["remote_size"] == 2
        assert report["gathered"] == [["server", 0], ["server", 1]]
    assert servers[0]["reply"] == "pong" and clients[2]["got"] == "ping"
    assert servers[0]["lookup_after"]  # unpublished: Lookup_name raises ERR_NAME


def test_spawn_multiple_honours_each_application_and_its_children_can_join(ompy, tmp_path):
    wdir = tmp_path / "wdir"
    wdir.mkdir()
    result = ompy.run(
        ["-n", "1", sys.executable, str(PROGRAMS / "spawn_multiple.py"), str(wdir)],
        timeout=200,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    reports = [json.loads(line) for line in result.stdout.splitlines()]
    parent = [r for r in reports if r["who"] == "parent"]
    children = sorted((r for r in reports if r["who"] == "child"), key=lambda r: r["rank"])
    assert parent == [{"who": "parent", "remote": 3, "errcodes": [[0, 0], [0]]}]
    assert [(c["rank"], c["size"], c["app"], c["env"]) for c in children] == [
        (0, 3, "A", "a"),
        (1, 3, "A", "a"),
        (2, 3, "B", "b"),
    ]
    assert [c["cwd"] for c in children] == [str(tmp_path), str(tmp_path), str(wdir)]
    assert children[0]["joined"] == children[1]["joined"] == [1, 1]
    assert (children[0]["joined_got"], children[1]["joined_got"]) == ("hi from 1", "hi from 0")
