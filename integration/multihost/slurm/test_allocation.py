"""``ompy run`` inside a Slurm allocation uses it: ras slurm reads the nodes and slots."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from integration.conftest import OMPY

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

REPORT = (
    "from ompy import MPI; c = MPI.COMM_WORLD; "
    "print('rank', c.rank, 'of', c.size, 'sum', c.allreduce(c.rank), flush=True)"
)


def test_ompy_run_in_salloc_starts_one_rank_per_task(slurm_one, slurm_jobs):
    result = slurm_jobs(slurm_one).run(
        ["salloc", "--immediate=20", "-n3", OMPY, "run", sys.executable, "-c", REPORT]
    )
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == [f"rank {r} of 3 sum 3" for r in range(3)]


def test_ompy_run_in_sbatch_uses_the_batch_allocation(slurm_one, slurm_jobs, tmp_path):
    out = tmp_path / "job.out"
    script = tmp_path / "job.sh"
    script.write_text(f'#!/bin/sh\nexec {OMPY} run --verbose {sys.executable} -c "{REPORT}"\n')
    result = slurm_jobs(slurm_one).run(
        ["sbatch", "--wait", "-n2", f"--output={out}", str(script)], timeout=120
    )
    assert result.returncode == 0, result.stderr + out.read_text()
    text = out.read_text()
    assert "allocation from Slurm job" in text, text
    assert sorted(line for line in text.splitlines() if line.startswith("rank")) == [
        f"rank {r} of 2 sum 1" for r in range(2)
    ]


# -- across the allocation's nodes: plm slurm starts one ompy daemon per node with srun --------

HERE = Path(__file__).parent
INTEGRATION = HERE.parents[1]


def reports(stdout: str) -> dict[int, dict]:
    found = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            found[report["rank"]] = report
    return found


def salloc(nodes: int, per_node: int, *command: str) -> list[str]:
    return ["salloc", "--immediate=20", f"-N{nodes}", f"--ntasks-per-node={per_node}", *command]


def test_ompy_run_in_salloc_starts_ranks_on_every_node_through_daemons(slurm_three, slurm_jobs):
    program = [sys.executable, str(HERE / "programs" / "where.py")]
    verbose = ["--mca", "plm_base_verbose", "10"]
    result = slurm_jobs(slurm_three).run(salloc(3, 2, OMPY, "run", *verbose, *program))
    assert result.returncode == 0, result.stderr
    assert "plm: selected slurm" in result.stderr
    found = reports(result.stdout)
    assert sorted(found) == list(range(6)), result.stdout
    for rank, report in found.items():
        assert not report["direct"]
        assert report["node"] == report["slurm_node"], report  # forked by that node's daemon
        assert report["left"] == (rank - 1) % 6 and report["total"] == 15
    assert sorted(r["node"] for r in found.values()) == ["n1", "n1", "n2", "n2", "n3", "n3"]


def test_the_suites_run_across_three_nodes_of_an_allocation(slurm_three, slurm_jobs, tmp_path):
    schedules = tmp_path / "schedules.json"
    schedules.write_text(json.dumps([[[0, 5, 1, 70_000], [5, 0, 2, 100], [2, 3, 0, 4090]]]))
    p2p = [
        sys.executable,
        str(INTEGRATION / "p2p/programs/p2p_suite.py"),
        str(schedules),
        "1048576",
    ]
    coll = [sys.executable, str(INTEGRATION / "coll/programs/coll_suite.py")]
    jobs = slurm_jobs(slurm_three)
    for program in (p2p, coll):
        result = jobs.run(
            salloc(3, 2, OMPY, "run", *program), env={"P2P_SUITE_NODE_SIZE": "2"}, timeout=240
        )
        assert result.returncode == 0, result.stderr
        found = reports(result.stdout)
        assert sorted(found) == list(range(6)), result.stdout


def test_an_abort_across_nodes_ends_the_job_and_every_daemon(slurm_three, slurm_jobs):
    program = [sys.executable, str(HERE / "programs" / "leave_early.py"), "abort"]
    result = slurm_jobs(slurm_three).run(salloc(3, 1, OMPY, "run", *program), timeout=120)
    assert result.returncode == 7, result.stderr
    assert sorted(result.stdout.split("\n")[:-1]) == [f"rank {r} up" for r in range(3)]


def daemon_pids(marker: str) -> list[int]:
    """The plm slurm daemons of the test (they carry its marker)."""
    from integration.conftest import marked_pids

    found = []
    for pid in marked_pids(marker):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        # python -m ompy.mca.plm.slurm.node_daemon, not srun (whose argv ends the same way)
        if cmdline[-3:-1] == [b"-m", b"ompy.mca.plm.slurm.node_daemon"] and not cmdline[0].endswith(
            b"srun"
        ):
            found.append(pid)
    return found


def test_a_killed_daemon_ends_the_job_naming_its_node(slurm_three, slurm_jobs):
    jobs = slurm_jobs(slurm_three)
    program = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(600)"]
    process = subprocess.Popen(
        salloc(3, 1, OMPY, "run", *program),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=jobs.env(),
    )
    jobs.launcher.launcher_pids.append(process.pid)
    try:
        deadline = time.monotonic() + 60
        while len(daemon_pids(jobs.launcher.marker)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        daemons = daemon_pids(jobs.launcher.marker)
        assert len(daemons) == 3, "the three daemons did not start"
        assert process.stdout is not None
        started = [process.stdout.readline() for _ in range(3)]  # every rank runs
        assert started == ["up\n"] * 3, started
        victim = daemons[1]
        node = Path(f"/proc/{victim}/environ").read_bytes().split(b"SLURMD_NODENAME=")[1]
        node_name = node.split(b"\0")[0].decode()
        os.kill(victim, signal.SIGKILL)
        _out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            slurm_three.client("scancel", "--user=root")
            process.kill()
            process.communicate()
    assert process.returncode != 0
    assert node_name in err and "daemon" in err, err
    # A daemon killed outright cannot remove its directory: the next daemon or launcher on
    # that node sweeps it (its owner is gone).
    from ompy.orte.launcher.session import sweep_stale

    deadline = time.monotonic() + 20
    while daemon_pids(jobs.launcher.marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    swept = sweep_stale(jobs.launcher.tmpdir)
    assert all(path.name.startswith("ompy-daemon-") for path in swept), swept
