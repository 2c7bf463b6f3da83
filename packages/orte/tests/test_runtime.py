"""The rank's run-time: the same modex rules alone (singleton) and under a launcher."""

from __future__ import annotations

import os
import queue
import secrets
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ompy.orte.control import (
    ControlServer,
    ModexKeyError,
    RankConnected,
    RankException,
    RankFinalized,
    RequestError,
    environment_for_rank,
    identity_from_environment,
)
from ompy.orte.mca.ess import Identity
from ompy.orte.runtime import Runtime

pytestmark = pytest.mark.timeout(60)


def singleton(tmp_path: Path) -> Identity:
    session = tmp_path / "session"
    session.mkdir()
    return Identity(
        jobid="s1",
        rank=0,
        size=1,
        local_rank=0,
        local_size=1,
        node_id=0,
        node_name="here",
        oversubscribed=False,
        session_dir=str(session),
        singleton=True,
    )


@pytest.fixture
def launched_runtime(tmp_path):
    """A runtime of rank 0 of a job of one, connected to a server in this process."""
    events: queue.Queue = queue.Queue()
    secret = secrets.token_bytes(32)
    server = ControlServer("jrt", 1, secret, events.put)
    server.start()
    env = environment_for_rank(
        jobid="jrt",
        rank=0,
        size=1,
        local_rank=0,
        local_size=1,
        node_id=0,
        node_name="here",
        server=server.address,
        secret=secret,
        oversubscribed=False,
        session_dir=str(tmp_path),
    )
    runtime = Runtime(identity_from_environment(env))
    yield runtime, events
    runtime.finalize()
    server.close()


@pytest.fixture(params=["singleton", "launched"])
def runtime(request, tmp_path):
    if request.param == "singleton":
        yield Runtime(singleton(tmp_path))
    else:
        yield request.getfixturevalue("launched_runtime")[0]


def test_put_commit_fence_get_round_trip(runtime):
    runtime.modex.put("addr", {"host": "h", "port": 4000, "raw": b"\x00\x01", "path": (1, 2)})
    runtime.modex.commit()
    runtime.modex.fence()
    assert runtime.modex.generation == 1
    # values come back as msgpack returns them: tuples become lists
    assert runtime.modex.get(0, "addr") == {
        "host": "h",
        "port": 4000,
        "raw": b"\0\1",
        "path": [1, 2],
    }


def test_staged_values_are_invisible_until_committed(runtime):
    runtime.modex.put("late", 1)
    with pytest.raises(ModexKeyError, match="rank 0 has not committed the modex key 'late'"):
        runtime.modex.get(0, "late")
    runtime.modex.commit()
    assert runtime.modex.get(0, "late") == 1


def test_a_value_that_cannot_travel_is_refused_at_put(runtime):
    with pytest.raises(TypeError, match="modex value for 'bad' cannot be published"):
        runtime.modex.put("bad", object())
    with pytest.raises(TypeError, match="modex keys are non-empty strings"):
        runtime.modex.put("", 1)


def test_asking_for_a_rank_outside_the_job_is_an_error(runtime):
    with pytest.raises(RequestError, match="requested rank 1 is not a rank of this job"):
        runtime.modex.get(1, "addr")


def test_finalize_is_idempotent_and_reported_once(launched_runtime):
    runtime, events = launched_runtime
    runtime.report_exception("Traceback: oops")
    runtime.finalize()
    runtime.finalize()
    seen = [events.get(timeout=5) for _ in range(3)]
    assert [type(e) for e in seen] == [RankConnected, RankException, RankFinalized]
    assert runtime.finalized


def test_a_singleton_finalize_removes_its_session_directory(tmp_path):
    runtime = Runtime(singleton(tmp_path))
    runtime.finalize()
    assert not Path(runtime.identity.session_dir).exists()


def run_alone(program: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPY_")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_a_program_started_alone_is_a_singleton_and_cleans_up_at_exit():
    result = run_alone(
        """
        import os
        from ompy.orte.runtime import init

        rt = init()
        assert init() is rt
        assert os.path.isdir(rt.identity.session_dir)
        print(rt.identity.jobid, rt.identity.session_dir)
        """
    )
    assert result.returncode == 0, result.stderr
    jobid, session_dir = result.stdout.split()
    assert jobid.startswith("s") and jobid[1:].isdigit()
    assert not os.path.exists(session_dir)  # finalized by atexit


def test_the_demo_runs_as_a_singleton():
    result = run_alone("from ompy.orte.demo import main\nmain()\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith(": 1 rank(s), singleton")
    assert lines[1].split() == ["rank", "local_rank", "node", "host", "pid"]
    assert lines[3].split()[0] == "0"


def test_a_singleton_abort_exits_with_the_code_says_why_and_cleans_up():
    result = run_alone(
        """
        from ompy.orte.runtime import init

        rt = init()
        print(rt.identity.session_dir, flush=True)
        rt.abort(4, "no input")
        """
    )
    assert result.returncode == 4
    assert "singleton aborted with code 4: no input" in result.stderr
    assert not os.path.exists(result.stdout.strip())


def test_a_singletons_uncaught_exception_is_printed_as_usual(tmp_path):
    program = "from ompy.orte.runtime import init\ninit()\nraise KeyError('lost key')\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPY_")}
    result = subprocess.run(
        [sys.executable, "-c", program],
        env={**env, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "KeyError: 'lost key'" in result.stderr
