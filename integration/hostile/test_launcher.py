"""The launcher's control server against hostile local clients (loopback only, bounded).

Strangers that connect and send garbage are refused; that must show as one aggregated warning,
not one line per connection.  When the launcher runs out of descriptors, it must pause
accepting instead of spinning (and instead of printing a line per failed ``accept``), and the
job must still finish normally.
"""

from __future__ import annotations

import json
import resource
import socket
import sys
import time
from pathlib import Path

import pytest

from .probe import cpu_share, fd_count, listening_ports, pid_of

PROGRAM = Path(__file__).parent / "programs" / "target.py"
pytestmark = [pytest.mark.timeout(180)]


def finish(process, flags: Path) -> str:
    (flags / "go").write_text("")
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    reports = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert sorted((r["rank"], r["got"]) for r in reports) == [(0, 7), (1, 42)], out
    return err


def test_refused_connections_and_exhausted_descriptors_are_quiet_and_cheap(ompy):
    flags = ompy.tmpdir / "flags"
    flags.mkdir()
    process = ompy.start(["-n", "2", sys.executable, str(PROGRAM), str(flags)])
    launcher = process.pid
    held: list[socket.socket] = []
    try:
        pid_of(flags, 0)
        pid_of(flags, 1)
        (port,) = listening_ports(launcher)
        for _ in range(200):  # strangers that talk nonsense
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(b"\xff" * 64)
        time.sleep(0.5)
        limit = fd_count(launcher) + 4
        old = resource.prlimit(launcher, resource.RLIMIT_NOFILE)
        resource.prlimit(launcher, resource.RLIMIT_NOFILE, (limit, old[1]))
        try:
            for _ in range(60):
                sock = socket.socket()
                sock.settimeout(5)
                sock.connect(("127.0.0.1", port))  # completes in the kernel's backlog
                held.append(sock)
            share = cpu_share(launcher, 2.0)
        finally:
            for sock in held:
                sock.close()
            resource.prlimit(launcher, resource.RLIMIT_NOFILE, old)
    finally:
        err = finish(process, flags)
    assert share < 0.25, f"the launcher used {share:.0%} of a CPU while out of descriptors"
    lines = err.splitlines()
    assert len(lines) <= 8, f"{len(lines)} lines of stderr:\n" + "\n".join(lines[:20])
    assert any("refused control connections" in line for line in lines), err
    assert any("paused accepting" in line for line in lines), err
