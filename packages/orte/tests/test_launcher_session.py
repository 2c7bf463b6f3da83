"""The session directory, the job's shared memory, and the sweep after killed launchers."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from ompy.orte.launcher.session import Session, launcher_pid, new_jobid, sweep_stale


def test_jobid_starts_with_the_launcher_pid():
    jobid = new_jobid()
    assert jobid.isalnum()
    assert launcher_pid(jobid) == os.getpid()


def test_session_is_private_and_remove_takes_the_jobs_shared_memory(tmp_path):
    shm = tmp_path / "shm"
    shm.mkdir()
    session = Session.create("abc123", base=tmp_path, shm_dir=shm)
    assert stat.S_IMODE(session.path.stat().st_mode) == 0o700
    (shm / "ompy-abc123-seg0").write_bytes(b"x")
    (shm / "ompy-abc1234-other-job").write_bytes(b"x")
    (session.path / "socket").write_text("")
    removed = session.remove()
    assert [p.name for p in removed] == ["ompy-abc123-seg0"]
    assert not session.path.exists()
    assert (shm / "ompy-abc1234-other-job").exists()


def test_sweep_removes_only_jobs_whose_launcher_is_gone(tmp_path):
    shm = tmp_path / "shm"
    shm.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_jobid = f"{int(dead.stdout):x}aaaaaa"
    live_jobid = new_jobid()
    dead_session = Session.create(dead_jobid, base=tmp_path, shm_dir=shm)
    live_session = Session.create(live_jobid, base=tmp_path, shm_dir=shm)
    (shm / f"ompy-{dead_jobid}-seg").write_bytes(b"x")
    removed = sweep_stale(tmp_path, shm)
    assert dead_session.path in removed
    assert not dead_session.path.exists()
    assert not (shm / f"ompy-{dead_jobid}-seg").exists()
    assert live_session.path.exists()
    live_session.remove()
