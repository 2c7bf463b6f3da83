"""Fixtures for multi-process tests: run ``ompy run`` as a user would, and prove it cleaned up.

Every job a test starts carries a unique marker in its environment (``OMPY_TEST_MARKER``), which
the ranks inherit; after each test the ``no_leftovers`` fixture checks that no process with that
marker is still alive, that no session directory is left in the test's private temporary
directory, and that no shared-memory file of the test's jobs is left in ``/dev/shm``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs
import pytest

OMPY = str(Path(sys.executable).with_name("ompy"))
MARKER_VAR = "OMPY_TEST_MARKER"
SHM_DIR = Path("/dev/shm")
#: How long processes of a finished test may take to disappear (the launcher-killed case).
SETTLE_SECONDS = 10.0


def marked_pids(marker: str) -> list[int]:
    """Pids of live processes whose environment carries ``marker``."""
    needle = f"{MARKER_VAR}={marker}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ and state != "Z":
            pids.append(int(entry.name))
    return pids


@attrs.define
class Launcher:
    """Starts ``ompy run`` for one test; every job gets the test's marker and temp directory."""

    marker: str
    tmpdir: Path
    launcher_pids: list[int] = attrs.field(factory=list)

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("OMPY_MCA_CLI_NAMES", None)
        env.update({MARKER_VAR: self.marker, "TMPDIR": str(self.tmpdir)})
        env.update(extra or {})
        return env

    def run(
        self,
        args: Sequence[str],
        *,
        input: str | None = None,
        timeout: float = 60,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``ompy run ARGS`` to completion (killed and failed after ``timeout`` seconds)."""
        process = self.start(args, env=env, cwd=cwd, stdin=subprocess.PIPE)
        try:
            out, err = process.communicate(input or "", timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"ompy run {' '.join(args)} did not finish in {timeout} s:\n{err}")
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def start(
        self,
        args: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        stdin=subprocess.DEVNULL,
    ) -> subprocess.Popen[str]:
        """Start ``ompy run ARGS`` in the background with pipes for stdout and stderr."""
        process = subprocess.Popen(
            [OMPY, "run", *args],
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(env),
            cwd=cwd,
        )
        self.launcher_pids.append(process.pid)
        return process

    def job_shm_files(self) -> list[Path]:
        """Shared-memory files of jobs started by this test's launchers (jobid = pid hex ...)."""
        from ompy.orte.launcher.session import launcher_pid

        mine = set(self.launcher_pids)
        try:
            names = [p for p in SHM_DIR.iterdir() if p.name.startswith("ompy-")]
        except OSError:
            return []
        return [p for p in names if launcher_pid(p.name.split("-")[1]) in mine]


@pytest.fixture
def ompy(tmp_path: Path) -> Iterator[Launcher]:
    """Runs ``ompy run`` for the test and checks afterwards that it left nothing behind."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    launcher = Launcher(uuid.uuid4().hex, tmpdir)
    yield launcher
    deadline = time.monotonic() + SETTLE_SECONDS
    while marked_pids(launcher.marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    survivors = marked_pids(launcher.marker)
    for pid in survivors:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not survivors, f"processes of the test survived it: {survivors}"
    leftovers = sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("ompy-"))
    assert not leftovers, f"session directories left behind: {leftovers}"
    shm = launcher.job_shm_files()
    assert not shm, f"shared-memory files left behind: {shm}"
