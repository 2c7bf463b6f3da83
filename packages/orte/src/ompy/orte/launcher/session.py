"""The per-job session directory and the cleanup of everything a job leaves on the host.

Each job gets a private directory (mode 0700) under the temporary directory, exported to the
ranks as ``OMPY_SESSION_DIR`` for their scratch files and sockets.  When the job ends the
launcher removes it, together with every shared-memory file whose name starts with
``ompy-<jobid>-`` (the project's naming rule for segments), so even ranks that were killed
before they could clean up leave nothing behind.

A launcher killed with SIGKILL cannot clean up; its ranks exit on their own, but its session
directory and shared memory stay.  Every launcher therefore sweeps, when it starts, the
leftovers of jobs whose launcher process no longer exists (:func:`sweep_stale`): the job id
starts with the launcher's pid, and only directories named ``ompy-job-<jobid>-*`` are touched.
A node daemon (:mod:`ompy.orte.daemon`) has its own directory, ``ompy-daemon-<its pid>-...``,
swept the same way once that pid is gone.  A singleton (a program started without
``ompy run``) is its own job, ``s<pid>``, with a
session directory ``ompy-session-s<pid>-*`` (and, when it uses file-backed shared memory, the
private directory ``ompy-session-<pid>-*`` of :mod:`ompy.opal.session`): a killed one leaves
them behind, and the same sweep removes them once that pid is gone.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from pathlib import Path

import attrs

SHM_DIR = Path("/dev/shm")


_JOB_DIR_PREFIX = "ompy-job-"
#: A singleton's session directory: ``ompy-session-s<pid in decimal>-<random>`` (the ess
#: singleton's job), or ``ompy-session-<pid in decimal>-<random>`` (opal's private one).
SINGLETON_DIR_PREFIX = "ompy-session-"
_RANDOM_HEX = 6
#: A node daemon's session directory: ``ompy-daemon-<daemon pid>-<jobid>-<random>``.
DAEMON_DIR_PREFIX = "ompy-daemon-"


def new_jobid() -> str:
    """A job id unique on this host: the launcher's pid and random bits, letters and digits only.

    It appears in shared-memory names and output tags, so it stays short and needs no quoting.
    """
    return f"{os.getpid():x}{secrets.token_hex(_RANDOM_HEX // 2)}"


def launcher_pid(jobid: str) -> int | None:
    """The pid of the launcher that made ``jobid`` (see :func:`new_jobid`), if it is one."""
    head = jobid[:-_RANDOM_HEX]
    try:
        return int(head, 16) if head else None
    except ValueError:
        return None


def singleton_pid(jobid: str) -> int | None:
    """The pid of the singleton whose job id is ``jobid`` (``s<pid>``), if it is one."""
    digits = jobid[1:]
    if not jobid.startswith("s") or not digits.isascii() or not digits.isdigit():
        return None
    return int(digits)


def _private_pid(token: str) -> int | None:
    """The pid in the name of an opal private session directory (``<pid>``), if it is one."""
    return int(token) if token.isascii() and token.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(base: Path | None = None, shm_dir: Path = SHM_DIR) -> list[Path]:
    """Remove session directories and shared memory of jobs whose owner process is gone.

    The owner is the launcher of an ``ompy run`` job, the process itself for a singleton.
    Only directories owned by this user are considered, so one user's launcher never touches
    another's files.  Returns what was removed.
    """
    parent = base if base is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        candidates = [(path, launcher_pid) for path in parent.glob(_JOB_DIR_PREFIX + "*")] + [
            (path, singleton_pid) for path in parent.glob(SINGLETON_DIR_PREFIX + "*")
        ]
    except OSError:
        return removed
    removed.extend(_sweep_daemon_dirs(parent))
    for path, owner_of in candidates:
        prefix = _JOB_DIR_PREFIX if owner_of is launcher_pid else SINGLETON_DIR_PREFIX
        jobid = path.name[len(prefix) :].split("-", 1)[0]
        pid = owner_of(jobid)
        private = pid is None and owner_of is singleton_pid
        if private:  # no job id: an opal private directory, whose segments live inside it
            pid = _private_pid(jobid)
        try:
            mine = path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.getuid()
        except OSError:
            continue
        if pid is None or not mine or _alive(pid):
            continue
        if private:
            shutil.rmtree(path, ignore_errors=True)
        else:
            removed.extend(Session(jobid, path, shm_dir).remove())
        removed.append(path)
    return removed


def daemon_dir_prefix(jobid: str) -> str:
    """The prefix of this process's session directory as the daemon of ``jobid``'s node."""
    return f"{DAEMON_DIR_PREFIX}{os.getpid()}-{jobid}-"


def _sweep_daemon_dirs(parent: Path) -> list[Path]:
    """Remove the session directories of node daemons that are gone (killed, say).

    Only the directory: the job's shared memory belongs to the job, whose launcher (or the
    node's next daemon of that job) removes it.
    """
    removed = []
    try:
        paths = list(parent.glob(DAEMON_DIR_PREFIX + "*"))
    except OSError:
        return removed
    for path in paths:
        token = path.name[len(DAEMON_DIR_PREFIX) :].split("-", 1)[0]
        try:
            mine = path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.getuid()
        except OSError:
            continue
        if not token.isascii() or not token.isdigit() or not mine or _alive(int(token)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def shm_prefix(jobid: str) -> str:
    """The prefix every shared-memory segment of the job starts with."""
    return f"ompy-{jobid}-"


@attrs.define
class Session:
    """A job's session directory; :meth:`remove` deletes it and the job's shared memory."""

    jobid: str
    path: Path
    shm_dir: Path = SHM_DIR

    @classmethod
    def create(cls, jobid: str, *, base: Path | None = None, shm_dir: Path = SHM_DIR) -> Session:
        parent = base if base is not None else Path(tempfile.gettempdir())
        path = Path(tempfile.mkdtemp(prefix=f"{_JOB_DIR_PREFIX}{jobid}-", dir=parent))
        os.chmod(path, 0o700)  # mkdtemp already does; say it, the ranks' secrets may live here
        return cls(jobid, path, shm_dir)

    def leftover_shm(self) -> list[Path]:
        """Shared-memory files of this job that still exist."""
        try:
            return sorted(self.shm_dir.glob(shm_prefix(self.jobid) + "*"))
        except OSError:
            return []

    def remove(self) -> list[Path]:
        """Delete the session directory and the job's shared memory; return what was removed."""
        removed = []
        for segment in self.leftover_shm():
            try:
                segment.unlink()
            except FileNotFoundError:
                continue
            except OSError:
                continue  # not ours to remove (another user's file with a colliding name)
            removed.append(segment)
        shutil.rmtree(self.path, ignore_errors=True)
        return removed
