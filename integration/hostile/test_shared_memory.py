"""Shared memory and doorbells against another local user (needs root to play that user).

The job id is visible to every user (the session directory's name in /tmp, /proc), so nothing
another user can do with it may break or slow the job: creating the shared-memory names it could
derive from the job id first, or flooding the doorbells of a rank that sleeps in a receive.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .probe import as_other_user, cpu_share, pid_of

PROGRAM = Path(__file__).parent / "programs" / "target.py"
pytestmark = [pytest.mark.timeout(180)]
SHM = Path("/dev/shm")


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A temporary directory every user can look into, as /tmp is (the test's own is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="ompy-hostile-"))
    path.chmod(0o755)
    yield path
    left = sorted(p.name for p in path.iterdir() if p.name.startswith("ompy-"))
    shutil.rmtree(path, ignore_errors=True)
    assert not left, f"session directories left behind: {left}"


def session_of(tmpdir: Path) -> Path:
    """The job's session directory (the only job of the test)."""
    (found,) = tmpdir.glob("ompy-job-*")
    return found


def doorbells(session: Path, jobid: str) -> list[str]:
    """Every unix socket address a rank of the job could be rung at, as root can see them."""
    found = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and jobid in fields[7]:
            found.append("\0" + fields[7][1:] if fields[7].startswith("@") else fields[7])
    with contextlib.suppress(OSError):
        found += [str(p) for p in session.iterdir() if p.is_socket()]
    return found


def finish(process, flags: Path) -> str:
    (flags / "go").write_text("")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    reports = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert sorted((r["rank"], r["got"]) for r in reports) == [(0, 7), (1, 42)], out
    return err


def test_another_user_cannot_ring_or_flood_a_sleeping_rank(ompy, public_tmp):
    flags = ompy.tmpdir / "flags"
    flags.mkdir()
    args = ["-n", "2", sys.executable, str(PROGRAM), str(flags)]
    process = ompy.start(args, env={"TMPDIR": str(public_tmp)})
    try:
        victim = pid_of(flags, 1)
        pid_of(flags, 0)
        session = session_of(public_tmp)
        targets = doorbells(session, session.name.split("-")[2])
        assert targets, "found no doorbell of the job at all"

        def flood() -> dict[str, int]:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sent = refused = 0
            end = time.monotonic() + 2.5
            while time.monotonic() < end:
                for target in targets:
                    try:
                        sock.sendto(b"\1", target)
                        sent += 1
                    except OSError:
                        refused += 1
            return {"sent": sent, "refused": refused}

        outcome: dict[str, int] = {}
        share = cpu_share(victim, 2.5, lambda: outcome.update(as_other_user(flood)))
    finally:
        err = finish(process, flags)
    assert outcome["sent"] == 0, f"another user rang the job's doorbells {outcome['sent']} times"
    assert share < 0.25, f"the sleeping rank used {share:.0%} of a CPU under the flood"
    assert "warning" not in err, err


def test_names_another_user_can_derive_from_the_job_id_do_not_break_the_job(ompy, public_tmp):
    """Pre-created names: MPI_Init failed (coll sm) or moved silently to tcp (btl sm)."""
    flags = ompy.tmpdir / "flags"
    flags.mkdir()
    verbose = ["--mca", "btl_base_verbose", "20"]
    args = ["-n", "2", *verbose, sys.executable, str(PROGRAM), str(flags)]
    process = ompy.start(args, env={"TMPDIR": str(public_tmp)})
    planted: list[str] = []
    try:
        deadline = time.monotonic() + 30
        jobid = None
        while jobid is None and time.monotonic() < deadline:
            for entry in public_tmp.glob("ompy-job-*"):
                jobid = entry.name.split("-")[2]
            time.sleep(0.001)
        assert jobid is not None, "the job's session directory never appeared"
        names = [f"ompy-{jobid}-btl-sm-{rank}" for rank in (0, 1)] + [
            f"ompy-{jobid}-coll-sm-0-{cid}-{serial}" for cid in range(4) for serial in range(4)
        ]

        def plant() -> list[str]:
            made = []
            for name in names:
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(SHM / name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o666))
                    made.append(name)
            return made

        planted = as_other_user(plant)
        pid_of(flags, 1)
        err = finish(process, flags)
    finally:
        with contextlib.suppress(Exception):
            (flags / "go").write_text("")
        process.wait(timeout=60)
        for name in planted:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(SHM / name)
    assert planted, "the test did not manage to plant any name"
    assert "warning" not in err, err
    segments = re.findall(r"btl sm: segment (\S+)", err)
    assert len(segments) == 2, err
    assert not set(segments) & set(names)
