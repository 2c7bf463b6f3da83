"""``Comm.Spawn``: a job starts workers through the launcher, they talk over the
intercommunicator (point to point, collectives, Merge) and everything ends cleanly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"

pytestmark = pytest.mark.timeout(240)


def reports(result) -> tuple[list[dict], list[dict]]:
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    parents = sorted((r for r in lines if r["who"] == "parent"), key=lambda r: r["rank"])
    workers = sorted((r for r in lines if r["who"] == "worker"), key=lambda r: r["rank"])
    return parents, workers


@pytest.mark.parametrize("btl", ["self,sm,tcp", "self,tcp"])
@pytest.mark.parametrize(("parents", "workers"), [(1, 3), (2, 2)])
def test_spawned_workers_exchange_data_and_exit_cleanly(ompy, btl, parents, workers):
    result = ompy.run(
        [
            "--mca",
            "btl",
            btl,
            "--oversubscribe",
            "-n",
            str(parents),
            sys.executable,
            str(PROGRAMS / "spawn_parent.py"),
            str(workers),
        ],
        timeout=200,
    )
    parent_reports, worker_reports = reports(result)
    assert [r["rank"] for r in parent_reports] == list(range(parents))
    assert [r["rank"] for r in worker_reports] == list(range(workers))
    total = parents + workers
    for report in parent_reports:
        assert report["is_inter"] and report["parent_of_parent_is_null"]
        assert (report["remote_size"], report["local_size"]) == (workers, parents)
        assert report["gathered"] == [100 + w for w in range(workers)]
        # low group first: the parents take the merged ranks 0..parents-1
        assert report["merged"] == [report["rank"], total, total]
        assert report["disconnected"]
    assert parent_reports[0]["results"] == [10 * w + 1 for w in range(workers)]
    assert parent_reports[0]["errcodes"] == [0] * workers
    for report in worker_reports:
        assert report["size"] == workers and report["argv"] == ["x y"]
        assert report["is_inter"] and report["parent_remote_size"] == parents
        assert report["bcast"] == "from the parents"
        assert report["gathered"] == list(range(parents))
        assert report["merged"] == [parents + report["rank"], total, total]
        assert report["world_sum"] == sum(range(workers))
        assert report["parent_after"]
