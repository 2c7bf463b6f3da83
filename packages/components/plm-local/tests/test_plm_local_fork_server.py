"""The fork server path of the local launcher: which ranks it forks, how their exits and
signals reach the launcher, and that the server and its ranks go away with the job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from ompy.mca.plm.local.launcher import LocalPlmModule, LocalRank
from ompy.orte.launcher.forkserver.ranks import ForkedRank
from ompy.orte.mca.plm import Stdio

from .conftest import marked_processes, placement, python, read_line, wait_exit

pytestmark = pytest.mark.timeout(60)

REPORT = """
import json, os, sys
print(json.dumps({
    "pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "cwd": os.getcwd(),
    "env": dict(os.environ), "argv": sys.argv,
}), flush=True)
"""


@pytest.fixture
def prepared(spawner):
    """The spawner's launcher with a fork server for ``python -c REPORT``."""
    spawner.launcher.prepare(python(REPORT), spawner.env(), Path.cwd())
    yield spawner
    spawner.launcher.finish()


def test_a_python_rank_is_forked_by_the_server_with_its_own_session_and_environment(
    prepared, tmp_path
):
    server = prepared.launcher.fork_server
    assert server is not None
    identity = {"OMPY_RANK": "1", "OMPY_RANK_NODES": "0*4", "OMPY_NODE_NAMES": "localhost"}
    rank, out = prepared.spawn_reporting(REPORT, rank=1, env=identity)
    try:
        report = json.loads(read_line(out, timeout=30))
    finally:
        os.close(out)
    assert isinstance(rank, ForkedRank)
    assert report["pid"] == rank.pid and report["sid"] == rank.pid  # leads a new session
    assert report["ppid"] != os.getpid()  # the server's child, not the launcher's
    assert report["env"] == prepared.env(identity)
    assert report["argv"] == ["-c"]
    assert wait_exit(rank) == 0


def test_exit_codes_reach_the_launcher(spawner):
    code = "import sys; sys.exit(5)"
    spawner.launcher.prepare(python(code), spawner.env(), Path.cwd())
    try:
        exiting = spawner.spawn(python(code))
        assert isinstance(exiting, ForkedRank)
        assert wait_exit(exiting, timeout=30) == 5
    finally:
        spawner.launcher.finish()


def test_signals_reach_the_rank_and_its_death_is_reported(spawner):
    code = "import time; time.sleep(60)"
    spawner.launcher.prepare(python(code), spawner.env(), Path.cwd())
    try:
        sleeping = spawner.spawn(python(code))
        assert isinstance(sleeping, ForkedRank)
        sleeping.signal(signal.SIGTERM)
        assert wait_exit(sleeping, timeout=30) == -signal.SIGTERM
    finally:
        spawner.launcher.finish()


def test_a_rank_whose_environment_differs_beyond_its_identity_is_executed(prepared):
    started = prepared.spawn(python(REPORT), env={"ANOTHER": "variable"})
    assert isinstance(started, LocalRank)
    assert wait_exit(started) == 0


def test_another_program_is_executed(prepared):
    started = prepared.spawn(python("pass"))
    assert isinstance(started, LocalRank)
    assert wait_exit(started) == 0


def test_without_the_fork_server_every_rank_is_executed(spawner):
    spawner.launcher = LocalPlmModule(fork_server=False)
    spawner.launcher.prepare(python(REPORT), spawner.env(), Path.cwd())
    assert spawner.launcher.fork_server is None
    started = spawner.spawn(python(REPORT))
    assert isinstance(started, LocalRank)
    assert wait_exit(started) == 0


def test_finishing_kills_the_server_and_its_running_ranks(spawner, token):
    code = "import time; time.sleep(60)"
    spawner.launcher.prepare(python(code), spawner.env(), Path.cwd())
    started = spawner.spawn(python(code))
    assert isinstance(started, ForkedRank)
    spawner.launcher.finish()
    assert wait_exit(started) == -signal.SIGKILL
    left = marked_processes(token)
    assert not left, [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in left]


def test_a_rank_that_would_inherit_a_private_descriptor_is_executed(prepared):
    """fork/exec gives a rank the launcher's stdin only if it is inheritable; so must we."""
    inheritable = os.get_inheritable(0)
    os.set_inheritable(0, False)
    try:
        started = prepared.launcher.spawn(
            placement(0),
            python(REPORT),
            prepared.env(),
            Path.cwd(),
            Stdio(None, subprocess.DEVNULL, subprocess.DEVNULL),
        )
    finally:
        os.set_inheritable(0, inheritable)
    prepared.ranks.append(started)
    assert isinstance(started, LocalRank)
    assert wait_exit(started) == 0
