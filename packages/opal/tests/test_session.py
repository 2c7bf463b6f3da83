"""The session directory: the launcher's when it gives one, else a private one that goes away."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from ompy.opal import session
from ompy.opal.session import SESSION_DIR_VAR, SessionDirectory, SessionDirError


def test_the_launchers_directory_is_used_as_given(tmp_path):
    given = tmp_path / "job-42"
    given.mkdir()
    directory = SessionDirectory(environ={SESSION_DIR_VAR: str(given)}, tempdir=tmp_path)
    assert directory.path() == given
    assert directory.private is None
    assert sorted(os.listdir(tmp_path)) == ["job-42"]


def test_session_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(SESSION_DIR_VAR, str(tmp_path))
    assert session.session_dir() == tmp_path


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("relative/dir", "is not an absolute path"),
        ("/nonexistent/ompy-session", "does not exist or is not a directory"),
    ],
)
def test_an_unusable_launcher_directory_is_an_error_naming_the_variable(value, complaint):
    directory = SessionDirectory(environ={SESSION_DIR_VAR: value})
    with pytest.raises(SessionDirError, match=f"{SESSION_DIR_VAR}={value} {complaint}"):
        directory.path()


def test_without_a_launcher_a_private_directory_is_created_once(tmp_path):
    directory = SessionDirectory(environ={}, tempdir=tmp_path)
    path = directory.path()
    try:
        assert path.parent == tmp_path
        assert path.name.startswith(f"ompy-session-{os.getpid()}-")
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
        assert directory.path() == path
    finally:
        directory.cleanup()
    assert not path.exists()
    assert os.listdir(tmp_path) == []


def test_a_forked_child_shares_the_private_directory_and_never_removes_it(tmp_path):
    directory = SessionDirectory(environ={}, tempdir=tmp_path)
    path = directory.path()
    try:
        pid = os.fork()
        if pid == 0:  # the child: same directory, and cleaning up must not remove it
            code = 0 if directory.path() == path else 3
            directory.cleanup()
            os._exit(code if path.is_dir() else 4)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert path.is_dir()
    finally:
        directory.cleanup()


def test_the_private_directory_is_removed_when_the_interpreter_exits(tmp_path):
    script = (
        "from ompy.opal.session import session_dir\n"
        "path = session_dir()\n"
        "(path / 'ompy-leftover').write_bytes(b'x')\n"
        "print(path)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != SESSION_DIR_VAR}
    env["TMPDIR"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    created = result.stdout.strip()
    assert os.path.dirname(created) == str(tmp_path)
    assert not os.path.exists(created)
    assert os.listdir(tmp_path) == []
