"""Every way a rank can leave a job ends it promptly and says what happened (issue 12).

Rank 1 of four leaves (``programs/exits.py``) while the others wait for it in a receive or in
a collective: ``sys.exit`` with any code, ``os._exit(0)``, a Finalize at exit that fails, an
atexit handler that exits.  None of these may hang the job; each is reported with the rank,
what it did and the exit code.  A job whose ranks all end together stays a normal end.  Also
here: the death of the fork server, the job secret that ranks must not pass on, and the
session directories that killed singletons leave behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
EXITS = str(PROGRAMS / "exits.py")
#: Start-up of four ranks on a loaded 2-core machine plus the exit grace and teardown.
PROMPT = 20.0

pytestmark = pytest.mark.timeout(120)


def _report(stderr: str) -> str:
    (line,) = [line for line in stderr.splitlines() if line.startswith("ompy run:")]
    return line


@pytest.mark.parametrize("where", ["recv", "coll"])
@pytest.mark.parametrize("code", [3, 0])
def test_sys_exit_while_others_wait_ends_the_job_with_its_code(ompy, code, where):
    started = time.monotonic()
    result = ompy.run(["-n", "4", "-q", EXITS, f"sys.exit{code}", where], timeout=60)
    assert time.monotonic() - started < PROMPT
    assert result.returncode == code, result.stderr
    report = _report(result.stderr)
    assert "rank 1 of 4 (pid " in report
    assert f"called sys.exit({code}) while ranks 0, 2, 3 had not finished" in report
    assert report.endswith(f"ompy run exits with code {code}.")


@pytest.mark.parametrize("code", [0, 4])
def test_every_rank_calling_sys_exit_at_its_end_is_a_normal_end(ompy, code):
    """``sys.exit(main())`` on every rank: they finalize together (within orte_exit_grace)."""
    result = ompy.run(["-n", "4", "-q", EXITS, f"all-exit{code}"])
    assert result.returncode == code, result.stderr
    if code == 0:
        assert result.stderr == ""
    else:
        assert "exited with code 4 after finalizing" in result.stderr


def test_sys_exit_after_the_others_finalized_is_a_normal_end(ompy):
    result = ompy.run(["-n", "4", "-q", EXITS, "finalize-first"])
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("os._exit0", "exited with code 0 without finalizing: every rank that initialized"),
        ("atexit-exit0", "exited with code 0 without finalizing: every rank that initialized"),
        (
            "finalize-raises",
            "exited without finalizing (the implicit MPI.Finalize at exit raised RuntimeError: "
            "deliberate failure in Finalize) while ranks 0, 2, 3 had not finished",
        ),
    ],
)
def test_exiting_with_0_without_finalizing_ends_the_job_with_1(ompy, how, says):
    started = time.monotonic()
    result = ompy.run(["-n", "4", "-q", EXITS, how, "coll"], timeout=60)
    assert time.monotonic() - started < PROMPT
    assert result.returncode == 1, result.stderr
    report = _report(result.stderr)
    assert "rank 1 of 4 (pid " in report and says in report
    assert report.endswith("ompy run exits with code 1.")


def test_the_death_of_the_fork_server_is_reported_as_such(ompy):
    process = ompy.start(["-n", "2", "-q", sys.executable, "-c", _PRINT_PARENT_AND_WAIT])
    parents = {process.stdout.readline().split()[-1] for _ in range(2)}
    (server,) = parents
    os.kill(int(server), signal.SIGKILL)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGKILL, err
    assert (
        f"ompy run: the fork server (pid {server}) that started the ranks was killed by signal 9 "
        "(SIGKILL), and the ranks died with it; the job ended. ompy run exits with code 137."
    ) in err
    assert "rank 0 of 2" not in err and "rank 1 of 2" not in err


_PRINT_PARENT_AND_WAIT = """
import os
from ompy import MPI
print("parent", os.getppid(), flush=True)
MPI.COMM_WORLD.recv(source=MPI.ANY_SOURCE)
"""


@pytest.mark.parametrize("fork_server", ["1", "0"], ids=["forked", "executed"])
def test_ranks_do_not_pass_the_job_secret_to_their_children(ompy, fork_server):
    options = ["--mca", "plm_local_fork_server", fork_server, "--mca", "btl", "self,tcp"]
    result = ompy.run(["-n", "2", "-q", *options, EXITS, "secret"])
    assert result.returncode == 0, result.stderr
    for rank in range(2):
        assert f"rank {rank}: environ=None child=None" in result.stdout
        assert f"rank {rank}: total=2" in result.stdout


def test_a_child_of_a_rank_that_imports_ompy_is_told_why_it_cannot_join(ompy):
    code = (
        "import subprocess, sys\n"
        "from ompy import MPI\n"
        "child = subprocess.run([sys.executable, '-c', 'from ompy import MPI'], "
        "capture_output=True, text=True)\n"
        "print('child exit', child.returncode)\n"
        "print(child.stderr.strip().splitlines()[-1])\n"
    )
    result = ompy.run(["-n", "1", "-q", sys.executable, "-c", code])
    assert result.returncode == 0, result.stderr
    assert "child exit 1" in result.stdout
    assert "no OMPY_SECRET: a rank removes the job's secret" in result.stdout


def test_session_directories_of_killed_singletons_are_swept(ompy):
    """A singleton killed by SIGKILL leaves ompy-session-s<pid>-*; the next launcher removes it."""
    singleton = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, signal\nfrom ompy import MPI\nos.kill(os.getpid(), signal.SIGKILL)",
        ],
        env=ompy.env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert singleton.returncode == -signal.SIGKILL, singleton.stderr
    (left,) = ompy.tmpdir.glob("ompy-session-s*")
    alive = ompy.tmpdir / f"ompy-session-s{os.getpid()}-0000"  # its owner (this test) lives
    alive.mkdir()
    try:
        assert ompy.run(["-n", "1", "-q", "true"]).returncode == 0
        assert not left.exists()
        assert alive.exists()
    finally:
        alive.rmdir()
