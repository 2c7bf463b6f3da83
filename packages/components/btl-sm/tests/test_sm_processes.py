"""btl/sm across real processes: large payloads, all-to-all, vanished peers, no leftovers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import leftovers, new_jobid

WORKER = Path(__file__).with_name("sm_worker.py")


class Job:
    """``size`` worker processes of one scenario; always reaped, with leftovers checked."""

    def __init__(self, tmp_path: Path, size: int, scenario: str, params=None, env=None) -> None:
        self.jobid = new_jobid()
        self.directory = tmp_path
        environ = {**os.environ, **(env or {})}
        args = [scenario, str(tmp_path), self.jobid, json.dumps(params or {})]
        self.procs = [
            subprocess.Popen(
                [sys.executable, str(WORKER), str(rank), str(size), *args],
                env=environ,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for rank in range(size)
        ]

    def wait(self, timeout: float) -> list[tuple[int, str]]:
        deadline = time.monotonic() + timeout
        results = []
        try:
            for proc in self.procs:
                out, err = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
                results.append((proc.returncode, out + err))
        finally:
            self.kill()
        return results

    def await_files(self, name: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        for rank in range(len(self.procs)):
            while not (self.directory / f"{name}-{rank}").exists():
                assert time.monotonic() < deadline, f"rank {rank} never wrote {name}"
                assert self.procs[rank].poll() is None, self.procs[rank].communicate()
                time.sleep(0.01)

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        assert all(proc.returncode is not None for proc in self.procs)
        assert leftovers(self.jobid) == [], "segments left in /dev/shm"


def ok(results) -> None:
    for rank, (code, output) in enumerate(results):
        assert code == 0, f"rank {rank} exited {code}:\n{output}"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("use_cma", ["yes", "no"], ids=["get-cma", "fragments"])
def test_payloads_from_0_bytes_to_256_mib_through_get_and_through_fragments(tmp_path, use_cma):
    job = Job(
        tmp_path,
        2,
        "large",
        {"btl_sm_use_cma": use_cma},
        {"EXPECT_GET": str(int(use_cma == "yes"))},
    )
    ok(job.wait(200))


@pytest.mark.timeout(240)
def test_16_oversubscribed_processes_all_to_all_without_deadlock(tmp_path):
    yielding = {"opal_progress_yield_when_idle": 1}  # as the run-time does on such a node
    job = Job(tmp_path, 16, "alltoall", yielding, {"COUNT": "100"})
    ok(job.wait(200))


@pytest.mark.timeout(120)
def test_all_to_all_on_the_locked_path_with_tiny_rings(tmp_path):
    params = {
        "btl_sm_lockfree": "no",
        "btl_sm_fbox_size": 1024,
        "btl_sm_max_send_size": 512,
        "btl_sm_eager_limit": 256,
    }
    job = Job(tmp_path, 4, "alltoall", params, {"COUNT": "300"})
    ok(job.wait(100))


@pytest.mark.timeout(120)
def test_a_sigkilled_peer_leaves_no_segment_and_is_reported(tmp_path):
    job = Job(tmp_path, 3, "vanish")
    job.await_files("attached")
    assert leftovers(job.jobid) == [], "once everyone attached, no segment has a name any more"
    job.procs[1].send_signal(signal.SIGKILL)
    job.procs[1].wait()
    (tmp_path / "go").touch()
    results = job.wait(60)
    assert results[1][0] == -signal.SIGKILL
    ok([results[0]])


@pytest.mark.timeout(120)
def test_a_peer_that_raises_is_reported_and_leaves_nothing(tmp_path):
    job = Job(tmp_path, 2, "vanish", env={"HOW": "exception"})
    job.await_files("attached")
    (tmp_path / "go").touch()
    results = job.wait(60)
    assert results[1][0] == 1 and "rank 1 fails on purpose" in results[1][1]
    ok([results[0]])
