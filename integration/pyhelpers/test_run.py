"""``python -m ompy`` under ``ompy run``: an uncaught exception or failing exit ends the whole job.

Without it the ranks waiting in ``Barrier`` would wait for the failed one until the launcher
noticed its exit; through it the failing rank prints its traceback and calls
``COMM_WORLD.Abort`` with the exit status, so the job ends at once with that status.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PROGRAM = str(Path(__file__).parent / "programs" / "run_fails.py")
pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize("size", [2, 4])
def test_uncaught_exception_aborts_the_job(ompy, size):
    args = ["-n", str(size), "--oversubscribe", sys.executable, "-m", "ompy", PROGRAM, "raise"]
    result = ompy.run(args, timeout=120)
    assert result.returncode == 1, result.stderr
    assert "ZeroDivisionError: rank 1 divided by zero" in result.stderr
    assert "called abort with error code 1" in result.stderr
    assert "done" not in result.stdout


def test_failing_exit_status_is_the_jobs(ompy):
    args = ["-n", "3", "--oversubscribe", sys.executable, "-m", "ompy", PROGRAM, "exit"]
    result = ompy.run(args, timeout=120)
    assert result.returncode == 7, result.stderr
    assert "done" not in result.stdout


@pytest.mark.parametrize("btl", ["self,sm", "self,tcp"])
def test_program_that_succeeds_runs_to_the_end(ompy, btl):
    args = ["-n", "3", "--oversubscribe", "--mca", "btl", btl]
    result = ompy.run([*args, sys.executable, "-m", "ompy", PROGRAM, "ok"], timeout=120)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split("\n")[:-1]) == ["done 0", "done 1", "done 2"]
