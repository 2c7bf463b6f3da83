"""Failures around dynamic processes: a spawned worker that raises ends the whole run with its
traceback and nothing survives; spawn requests the launcher cannot honour are MPI errors at
every rank of the spawning group, which can go on."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"

pytestmark = pytest.mark.timeout(200)


def test_a_spawned_worker_that_raises_ends_the_run_with_its_traceback(ompy):
    result = ompy.run(
        ["-n", "1", sys.executable, str(PROGRAMS / "spawn_failing.py"), "1"], timeout=150
    )
    assert result.returncode == 1, result.stderr
    assert "raised an uncaught exception" in result.stderr
    assert "rank 1 of spawned job" in result.stderr
    assert "RuntimeError: worker gives up" in result.stderr
    assert " rank 1] Traceback" in result.stderr
    # the ompy fixture checks that no process of the run survived it


def test_spawn_requests_the_launcher_refuses_are_errors_of_the_whole_group(ompy):
    result = ompy.run(
        ["--oversubscribe", "-n", "2", sys.executable, str(PROGRAMS / "spawn_refused.py")],
        timeout=150,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = sorted(result.stdout.splitlines())
    assert len(lines) == 2 * 4, result.stdout
    for rank in (0, 1):
        assert f"{rank} missing-program ERR_SPAWN" in lines
        assert f"{rank} unknown-host ERR_SPAWN" in lines
        assert f"{rank} no-port ERR_PORT" in lines
        assert f"{rank} maxprocs ERR_SPAWN" in lines
