"""Starting a daemon: through a remote shell (``ssh host ...``), or directly on this host.

The daemon's command line holds nothing secret (the interpreter and ``-m ompy.orte.daemon``);
its :class:`~.protocol.LaunchInfo`, launch secret included, is written to its standard input,
which then stays open: the daemon takes its end-of-file as the loss of whoever started it.
The remote shell runs in its own session (a Ctrl-C at the launcher's terminal reaches only the
launcher, which ends the job in order) and dies with the process that started it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess

from ompy.orte.control import wire
from ompy.orte.launcher.forkserver.deathsig import load_prctl, preexec_die_with_parent

from .protocol import LaunchInfo

#: The module a daemon runs as (``python -m``), the same program as ``ompy daemon``.
DAEMON_MODULE = "ompy.orte.daemon"


def daemon_argv(info: LaunchInfo, host: str | None) -> list[str]:
    """The command that starts the daemon of ``info`` on ``host`` (``None``: this host)."""
    command = [info.python, "-m", DAEMON_MODULE]
    if host is None:
        return command
    # A remote shell joins its arguments into one shell command line: quote each word.
    return [*info.agent, host, shlex.join(command)]


def start_daemon(
    info: LaunchInfo, host: str | None, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start the daemon of ``info`` and hand it its launch record; raises ``OSError``."""
    process = subprocess.Popen(
        daemon_argv(info, host),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
        # The hook only calls prctl, getppid and _exit (see deathsig), safe beside threads.
        preexec_fn=preexec_die_with_parent(os.getpid(), load_prctl()),  # noqa: PLW1509
    )
    assert process.stdin is not None
    try:
        process.stdin.write(wire.encode(info.to_wire()))
        process.stdin.flush()
    except OSError:
        pass  # it died at once: its exit status and stderr tell why
    return process


def describe_failure(process: subprocess.Popen[bytes], host: str) -> str:
    """Why a daemon's process ended, with the last lines it (or the remote shell) wrote."""
    status = process.returncode
    stderr = b""
    if process.stderr is not None:
        with contextlib.suppress(OSError, ValueError):
            os.set_blocking(process.stderr.fileno(), False)
            stderr = process.stderr.read() or b""
    lines = stderr.decode(errors="replace").strip().splitlines()[-5:]
    how = f"killed by signal {-status}" if status is not None and status < 0 else f"status {status}"
    said = ("; it said: " + " / ".join(lines)) if lines else ""
    return f"the daemon on {host} ended ({how}){said}"
