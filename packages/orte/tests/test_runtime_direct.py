"""A directly launched rank's run-time: modex, abort and finalize through the ess services."""

from __future__ import annotations

import secrets
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from ompy.orte.control import ModexKeyError
from ompy.orte.mca.ess import Identity, JobServices
from ompy.orte.runtime import Runtime

pytestmark = pytest.mark.timeout(60)


class RecordingServices(JobServices):
    """Job services of a job of one, recording what the run-time asked of them."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.calls: list[str] = []

    def commit(self, data: dict[str, Any]) -> None:
        self.calls.append("commit")
        self.data.update(data)

    def fence(self) -> None:
        self.calls.append("fence")

    def get(self, rank: int, key: str) -> Any:
        try:
            return self.data[key]
        except KeyError:
            raise ModexKeyError(rank, key) from None

    def abort(self, code: int, message: str) -> None:
        self.calls.append(f"abort {code} {message}")

    def finalize(self) -> None:
        self.calls.append("finalize")


def direct(session: Path, local_rank: int = 0) -> Identity:
    return Identity(
        jobid="pmi1_0",
        rank=local_rank,
        size=local_rank + 1,
        local_rank=local_rank,
        local_size=local_rank + 1,
        node_id=0,
        node_name="n1",
        oversubscribed=False,
        session_dir=str(session),
        secret=secrets.token_bytes(32),
        direct=True,
    )


def test_a_direct_identity_has_a_secret_and_no_control_server(tmp_path):
    identity = direct(tmp_path)
    assert identity.direct and identity.server is None
    with pytest.raises(ValueError, match="no control server"):
        Identity(**{**identity.__getstate__(), "server": ("h", 1)})
    with pytest.raises(ValueError, match="has the job secret"):
        Identity(**{**identity.__getstate__(), "secret": None})


def test_the_modex_goes_through_the_services(tmp_path):
    services = RecordingServices()
    runtime = Runtime(direct(tmp_path), services=services)
    runtime.modex.put("card", [1, 2])
    runtime.modex.commit()
    runtime.modex.fence()
    assert runtime.modex.get(0, "card") == [1, 2]
    with pytest.raises(ModexKeyError):
        runtime.modex.get(0, "nothing")
    assert runtime.modex.generation == 1
    assert services.calls == ["commit", "fence"]


def test_a_direct_identity_without_services_is_refused(tmp_path):
    with pytest.raises(ValueError, match="needs its ess module's job services"):
        Runtime(direct(tmp_path))


@pytest.mark.parametrize("local_rank", [0, 1])
def test_finalize_ends_the_services_and_local_rank_0_removes_the_session(tmp_path, local_rank):
    session = tmp_path / "session"
    session.mkdir()
    services = RecordingServices()
    runtime = Runtime(direct(session, local_rank), services=services)
    runtime.finalize()
    runtime.finalize()
    assert services.calls == ["finalize"]
    assert session.exists() == (local_rank != 0)


def run_direct(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    """Run ``body`` in a process whose run-time is direct, with recording services.

    The services print each call, so the parent sees what happened before the process ended.
    """
    session = tmp_path / "session"
    session.mkdir()
    program = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_runtime_direct import RecordingServices, direct
        from pathlib import Path
        from ompy.orte import runtime as rt

        class Printing(RecordingServices):
            def abort(self, code, message):
                print("ABORT", code, message, flush=True)
            def finalize(self):
                print("FINALIZE", flush=True)

        identity = direct(Path({str(session)!r}))
        runtime = rt.Runtime(identity, services=Printing())
        rt._runtime = runtime
        sys.excepthook = runtime._excepthook
        import atexit
        atexit.register(runtime._at_exit)
        rt._note_sys_exit()
        """
    ) + textwrap.dedent(body)
    return subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=30, check=False
    )


def test_an_uncaught_exception_is_printed_and_ends_the_job(tmp_path):
    done = run_direct(tmp_path, "raise RuntimeError('boom')\n")
    assert done.returncode == 1
    assert "RuntimeError: boom" in done.stderr
    assert "ABORT 1 rank 0 raised RuntimeError" in done.stdout
    assert not (tmp_path / "session").exists()


def test_a_non_zero_sys_exit_before_finalize_ends_the_job_with_its_status(tmp_path):
    # MPI's finalize at exit asks leave_if_early first, as registered here
    body = "import atexit\natexit.register(runtime.leave_if_early)\nsys.exit(5)\n"
    done = run_direct(tmp_path, body)
    assert done.returncode == 5
    assert "ABORT 5 rank 0 called sys.exit(5) before MPI Finalize" in done.stdout


def test_sys_exit_zero_finalizes_normally(tmp_path):
    done = run_direct(
        tmp_path, "import atexit\natexit.register(runtime.leave_if_early)\nsys.exit(0)\n"
    )
    assert done.returncode == 0
    assert "ABORT" not in done.stdout and "FINALIZE" in done.stdout


def test_abort_removes_the_session_and_exits_with_the_code(tmp_path):
    done = run_direct(tmp_path, "runtime.abort(9, 'enough')\n")
    assert done.returncode == 9
    assert "ABORT 9 enough" in done.stdout
    assert "ends the job with code 9: enough" in done.stderr
    assert not (tmp_path / "session").exists()
