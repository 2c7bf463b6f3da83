"""``ompy run`` inside a Slurm allocation uses it: ras slurm reads the nodes and slots."""

from __future__ import annotations

import sys

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
