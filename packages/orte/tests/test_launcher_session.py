"""The session directory, the job's shared memory, and the sweep after killed launchers."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

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


def test_sweep_removes_sessions_of_singletons_that_are_gone(tmp_path):
    """``ompy-session-s<pid>-*`` of a dead singleton goes; a live one's and a stranger's stay."""
    shm = tmp_path / "shm"
    shm.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_dir = tmp_path / f"ompy-session-s{int(dead.stdout)}-1a2b3c4d"
    dead_private = tmp_path / f"ompy-session-{int(dead.stdout)}-k2_x9z0q"  # opal's own
    live_dir = tmp_path / f"ompy-session-s{os.getpid()}-1a2b3c4d"
    live_private = tmp_path / f"ompy-session-{os.getpid()}-k2_x9z0q"
    odd_dir = tmp_path / "ompy-session-sXYZ-1a2b3c4d"  # not a singleton's name: left alone
    for path in (dead_dir, dead_private, live_dir, live_private, odd_dir):
        path.mkdir()
        (path / "scratch").write_bytes(b"x")
    (shm / f"ompy-s{int(dead.stdout)}-seg").write_bytes(b"x")
    removed = sweep_stale(tmp_path, shm)
    assert dead_dir in removed and not dead_dir.exists()
    assert dead_private in removed and not dead_private.exists()
    assert not (shm / f"ompy-s{int(dead.stdout)}-seg").exists()
    assert live_dir.exists() and live_private.exists() and odd_dir.exists()


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_sweep_never_touches_another_users_singleton_session(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = tmp_path / f"ompy-session-s{int(dead.stdout)}-1a2b3c4d"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    assert sweep_stale(tmp_path, tmp_path) == []
    assert theirs.exists()
