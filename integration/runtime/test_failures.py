"""The error policy seen from the command line: which rank, why, which exit code, nothing left."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest

from ..conftest import marked_pids

PROGRAMS = Path(__file__).parent / "programs"
FAIL = str(PROGRAMS / "fail.py")

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    ("how", "code", "reason"),
    [
        ("exit", 7, "rank 1 of 3 (pid {pid}, on {host}) exited with code 7"),
        ("kill", 137, "rank 1 of 3 (pid {pid}, on {host}) was killed by signal 9 (SIGKILL)"),
        ("abort", 5, "called abort with error code 5: deliberate abort"),
    ],
)
def test_first_failing_rank_ends_the_job_with_its_code(ompy, how, code, reason):
    started = time.monotonic()
    result = ompy.run(
        ["-n", "3", "-q", "--mca", "orte_abort_timeout", "2", FAIL],
        env={"FAIL_RANK": "1", "FAIL_HOW": how},
    )
    assert result.returncode == code, result.stderr
    assert time.monotonic() - started < 15
    (report,) = [line for line in result.stderr.splitlines() if line.startswith("ompy run:")]
    assert "rank 1 of 3" in report
    assert reason.split(")")[-1].strip() in report
    # The other ranks were terminated, unless they had already failed in their fence (a rank
    # that exits finalizes first, so its peers' next fence fails at once: a race by design).
    assert re.search(
        r"the (2 other ranks still running were|1 other rank still running was) "
        r"|no other rank was still running",
        report,
    )
    assert report.endswith(f"ompy run exits with code {code}.")


def test_uncaught_exception_is_reported_with_its_traceback(ompy):
    result = ompy.run(["-n", "3", "-q", FAIL], env={"FAIL_RANK": "2", "FAIL_HOW": "raise"})
    assert result.returncode == 1, result.stderr
    assert "rank 2 of 3" in result.stderr
    assert "raised an uncaught exception" in result.stderr
    assert "[rank 2] Traceback (most recent call last):" in result.stderr
    assert "[rank 2] ValueError: deliberate failure in rank 2" in result.stderr


def test_the_report_names_the_rank_that_failed_first_not_its_peers_that_failed_because_of_it(
    ompy,
):
    result = ompy.run(["-n", "3", "-q", str(PROGRAMS / "fail_in_collective.py")])
    assert result.returncode == 1, result.stderr
    (report,) = [line for line in result.stderr.splitlines() if line.startswith("ompy run:")]
    assert "rank 1 of 3" in report and "raised an uncaught exception" in report, report
    assert "[rank 1] TypeError: this object refuses to be pickled" in result.stderr
    assert "failed in this collective" not in result.stderr, "a peer's error was reported"


def test_ranks_that_ignore_sigterm_are_killed_after_the_abort_timeout(ompy):
    started = time.monotonic()
    result = ompy.run(
        ["-n", "2", "-q", "--mca", "orte_abort_timeout", "0.5", FAIL],
        env={"FAIL_RANK": "0", "FAIL_HOW": "exit", "IGNORE_TERM": "1"},
    )
    assert result.returncode == 7, result.stderr
    assert time.monotonic() - started < 10


def test_shared_memory_of_a_killed_rank_is_removed(ompy):
    result = ompy.run(["-n", "2", "-q", FAIL], env={"FAIL_RANK": "0", "FAIL_HOW": "shm"})
    assert result.returncode == 137, result.stderr
    # the no_leftovers check of the fixture proves /dev/shm/ompy-<jobid>-leftover is gone


def test_exit_code_of_plain_programs(ompy):
    result = ompy.run(["-n", "3", "-q", "sh", "-c", 'exit "$OMPY_RANK"'])
    assert result.returncode in (1, 2)  # whichever failing rank was seen first
    assert f"exited with code {result.returncode}" in result.stderr


def _wait_for_ready(process, count: int) -> None:
    for _ in range(count):
        line = process.stdout.readline()
        assert "ready" in line, line if line else process.stderr.read()


def test_ctrl_c_terminates_the_job_promptly(ompy):
    process = ompy.start(["-n", "3", "-q", FAIL])
    _wait_for_ready(process, 3)
    started = time.monotonic()
    process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert time.monotonic() - started < 5
    assert "interrupted (SIGINT)" in err
    assert not marked_pids(ompy.marker)


def test_sigterm_to_the_launcher_is_forwarded(ompy):
    process = ompy.start(["-n", "2", "-q", FAIL])
    _wait_for_ready(process, 2)
    process.send_signal(signal.SIGTERM)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGTERM, err
    assert "received SIGTERM and forwarded it" in err


@pytest.mark.parametrize(
    ("program", "fork_server", "processes"),
    [([FAIL], "1", 4), ([FAIL], "0", 3), (["sleep", "60"], "1", 3)],
    ids=["forked-ranks", "executed-ranks", "plain"],
)
def test_ranks_die_when_the_launcher_is_killed(ompy, program, fork_server, processes):
    """Nothing survives a SIGKILL to the launcher: not the ranks, not the fork server.

    A Python job has the launcher, its fork server and two ranks; without the fork server,
    or for a program that is not Python, the launcher and two ranks.
    """
    options = ["--mca", "plm_local_fork_server", fork_server]
    process = ompy.start(["-n", "2", "-q", *options, *program])
    if program == [FAIL]:
        _wait_for_ready(process, 2)
    else:
        deadline = time.monotonic() + 60  # a generous bound for a loaded machine
        while len(marked_pids(ompy.marker)) < processes and time.monotonic() < deadline:
            time.sleep(0.05)
    assert len(marked_pids(ompy.marker)) == processes
    process.kill()
    process.communicate(timeout=10)
    deadline = time.monotonic() + 30
    while marked_pids(ompy.marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not marked_pids(ompy.marker)
    # The killed launcher could not remove its session directory; the next launcher does.
    assert list(ompy.tmpdir.glob("ompy-job-*"))
    assert ompy.run(["-n", "1", "true"]).returncode == 0
    assert not list(ompy.tmpdir.glob("ompy-job-*"))


def test_timeout_prints_every_rank_stack_then_ends_the_job(ompy):
    result = ompy.run(["-n", "2", "-q", "--timeout", "2", FAIL])
    assert result.returncode == 124, result.stderr
    assert "did not finish within --timeout 2 s" in result.stderr
    for rank in range(2):
        assert f"--- rank {rank} (pid " in result.stderr
    assert result.stderr.count("in wait_in_fence") == 2


def test_timeout_with_programs_that_are_not_ompy_programs(ompy):
    result = ompy.run(["-n", "2", "-q", "--timeout", "1", "sleep", "60"])
    assert result.returncode == 124, result.stderr
    assert result.stderr.count("no stack available") == 2


def test_sigusr1_prints_stacks_and_the_job_goes_on(ompy):
    process = ompy.start(["-n", "2", "-q", "--timeout", "4", FAIL])
    _wait_for_ready(process, 2)
    time.sleep(0.3)  # let the ranks reach the fence
    process.send_signal(signal.SIGUSR1)
    _out, err = process.communicate(timeout=30)
    assert "SIGUSR1: stacks of 2 running ranks" in err
    assert process.returncode == 124  # it went on until the timeout
