"""``ompy run`` judges the user's MCA settings once, before launching: one message, not one
traceback per rank, and no silence about a name that nothing declares."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.timeout(120)

PROGRAM = ["-c", "from ompy import MPI; print('ran', MPI.COMM_WORLD.Get_rank())"]


def launch(ompy, *mca: str, env: dict[str, str] | None = None):
    return ompy.run(["-n", "2", *mca, sys.executable, *PROGRAM], env=env)


def test_a_misspelt_name_is_one_warning_with_suggestions_and_the_job_runs(ompy):
    result = launch(ompy, "--mca", "btl_tcp_if_inclde", "lo")
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split("\n")[:2]) == ["ran 0", "ran 1"]
    (line,) = result.stderr.splitlines()
    assert line.startswith("ompy run: warning: MCA parameter 'btl_tcp_if_inclde'")
    assert "did you mean 'btl_tcp_if_include'" in line


def test_a_bad_value_stops_the_job_before_any_rank_even_for_an_unselected_component(ompy):
    result = launch(ompy, "--mca", "btl", "self,sm", env={"OMPY_MCA_btl_tcp_eager_limit": "-5"})
    assert result.returncode == 1
    assert result.stdout == ""  # no rank ran
    (line,) = result.stderr.splitlines()
    assert line.startswith("ompy run: MCA parameter 'btl_tcp_eager_limit' has the invalid value")
    assert "from environment" in line


def test_selecting_a_component_that_is_not_installed_is_one_paragraph(ompy):
    result = launch(ompy, "--mca", "btl", "self,openib")
    assert result.returncode == 1
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert "no btl component named 'openib' is installed" in line
    assert "Traceback" not in result.stderr


def test_a_component_that_cannot_run_is_reported_without_a_traceback(ompy):
    """Decided in the ranks (which interfaces exist), so the first rank's message is the report."""
    result = launch(ompy, "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "eth9")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    report = [line for line in result.stderr.splitlines() if line.startswith("[rank ")]
    (line,) = report
    assert "NoComponentError: no pml component is able to run here" in line
    assert "btl_tcp_if_include (eth9) matches no interface" in line
