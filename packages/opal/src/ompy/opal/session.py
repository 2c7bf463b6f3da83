"""The session directory: where this process keeps files that must not outlive its job.

Shared-memory files (the mmap shmem component), rendezvous sockets and similar live here, so
that cleaning up a job means removing one directory.

- Under ``ompy run`` the launcher creates one directory per job, exports it as
  ``$OMPY_SESSION_DIR`` to every rank, and removes it when the job ends, even when ranks were
  killed and never ran their own clean-up.  Ranks therefore use it as given and never remove it.
- A process started without a launcher (a singleton, a test, a tool) creates a private
  directory instead: mode 0700 under the system temp directory, with an unpredictable name
  (``tempfile.mkdtemp``), so that other users can neither read it nor plant files or symlinks in
  it, and two independent processes never collide or remove each other's files.  It is removed at
  interpreter exit.  A child forked from that process keeps using its parent's directory (which
  lives as long as the parent) and never removes it: forked children often leave through
  ``os._exit`` without running exit handlers, so a directory of their own would be leaked.
  A process killed by a signal cannot clean up; that is why launched jobs use the launcher's
  directory.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

#: Set by the launcher to the job's session directory.
SESSION_DIR_VAR = "OMPY_SESSION_DIR"


class SessionDirError(RuntimeError):
    """``$OMPY_SESSION_DIR`` names something that cannot serve as the session directory."""


class SessionDirectory:
    """Finds or creates the session directory of one process.

    ``environ`` and ``tempdir`` exist for tests; by default the real environment and the
    system temp directory are used.  The environment is consulted on every call (cheap), while a
    private directory is created once and then reused.
    """

    def __init__(
        self, environ: Mapping[str, str] | None = None, tempdir: str | os.PathLike | None = None
    ) -> None:
        self._environ = environ
        self._tempdir = tempdir
        self._private: Path | None = None
        self._owner_pid: int | None = None
        self._lock = threading.Lock()

    def path(self) -> Path:
        """The session directory: the launcher's if it set one, else this process's own."""
        environ = os.environ if self._environ is None else self._environ
        given = environ.get(SESSION_DIR_VAR)
        if given:
            return self._check_given(Path(given))
        with self._lock:
            if self._private is None or not self._private.is_dir():
                self._private = Path(
                    tempfile.mkdtemp(prefix=f"ompy-session-{os.getpid()}-", dir=self._tempdir)
                )
                self._owner_pid = os.getpid()
                atexit.register(self.cleanup)
            return self._private

    @property
    def private(self) -> Path | None:
        """The private directory this object created, if any (whether or not it is in use)."""
        return self._private

    def cleanup(self) -> None:
        """Remove the private directory, but only in the process that created it."""
        with self._lock:
            if self._private is not None and self._owner_pid == os.getpid():
                shutil.rmtree(self._private, ignore_errors=True)
                self._private = None
                self._owner_pid = None

    @staticmethod
    def _check_given(path: Path) -> Path:
        if not path.is_absolute():
            raise SessionDirError(
                f"{SESSION_DIR_VAR}={path} is not an absolute path; the launcher sets an "
                f"absolute one, so unset the variable or give a full path"
            )
        if not path.is_dir():
            raise SessionDirError(
                f"{SESSION_DIR_VAR}={path} does not exist or is not a directory; the launcher "
                f"creates it for the job and removes it when the job ends, so this process "
                f"probably outlived its job (or the variable was set by hand: create it first, "
                f"or unset it to get a private directory)"
            )
        if not os.access(path, os.W_OK | os.X_OK):
            raise SessionDirError(
                f"{SESSION_DIR_VAR}={path} is not writable by this user; "
                f"unset it to get a private directory"
            )
        return path


_process = SessionDirectory()


def session_dir() -> Path:
    """The session directory of this process (see the module documentation for which one)."""
    return _process.path()
