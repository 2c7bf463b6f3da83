"""The tcp BTL's listener against hostile local clients (loopback only, bounded in count and time).

Rank 1 of a two-rank job over tcp waits in a receive while the test opens idle connections to
its listener: each stranger must cost neither a receive buffer nor a descriptor for long
(``btl_tcp_max_unauthenticated``, ``btl_tcp_handshake_timeout``), running out of descriptors
must not make the rank spin, the job must still finish normally, and the refusals appear as one
aggregated warning, not a line each.  A one-node job over shared memory opens no listener.
"""

from __future__ import annotations

import contextlib
import json
import resource
import socket
import sys
import time
from pathlib import Path

import pytest

from .probe import cpu_share, fd_count, listening_ports, pid_of, rss_bytes

PROGRAM = Path(__file__).parent / "programs" / "target.py"
pytestmark = [pytest.mark.timeout(180)]
TCP = ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"]
TIMEOUT = 1.5
CAP = 32


def strangers(port: int, count: int) -> list[socket.socket]:
    """``count`` connections to ``port`` that never say a word."""
    opened = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(5)
        try:
            sock.connect(("127.0.0.1", port))
        except OSError:
            sock.close()
            continue
        opened.append(sock)
    return opened


def closed_by_peer(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True  # reset


def finish(ompy_process, flags: Path, socks: list[socket.socket]) -> tuple[str, str]:
    for sock in socks:
        sock.close()
    (flags / "go").write_text("")
    out, err = ompy_process.communicate(timeout=60)
    assert ompy_process.returncode == 0, err
    reports = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert sorted((r["rank"], r["got"]) for r in reports) == [(0, 7), (1, 42)], out
    return out, err


def start(ompy, flags: Path, *params: str):
    flags.mkdir()
    args = ["-n", "2", *params, sys.executable, str(PROGRAM), str(flags)]
    return ompy.start(args)


def test_idle_strangers_cost_no_buffer_and_are_closed_at_the_handshake_deadline(ompy):
    flags = ompy.tmpdir / "flags"
    params = [
        *TCP,
        *("--mca", "btl_tcp_handshake_timeout", str(TIMEOUT)),
        *("--mca", "btl_tcp_max_unauthenticated", str(CAP)),
    ]
    process = start(ompy, flags, *params)
    socks: list[socket.socket] = []
    try:
        victim = pid_of(flags, 1)
        pid_of(flags, 0)
        (port,) = listening_ports(victim)
        fds, rss = fd_count(victim), rss_bytes(victim)
        socks = strangers(port, 300)
        opened = time.monotonic()
        time.sleep(0.5)
        # Today: 300 buffers of 256 KiB (75 MiB) and 300 descriptors.
        assert fd_count(victim) <= fds + CAP + 4, "strangers beyond the cap kept descriptors"
        assert rss_bytes(victim) - rss < 24 << 20, "strangers got receive buffers"
        deadline = opened + TIMEOUT + 5
        while time.monotonic() < deadline and not all(closed_by_peer(s) for s in socks):
            time.sleep(0.1)
        assert all(closed_by_peer(s) for s in socks), "strangers outlived the handshake deadline"
        assert fd_count(victim) <= fds + 2
    finally:
        _, err = finish(process, flags, socks)
    refusals = [line for line in err.splitlines() if "refused" in line]
    assert 1 <= len(refusals) <= 3, err
    assert "no handshake within 1.5 s" in err, err


def test_running_out_of_descriptors_does_not_make_a_rank_spin(ompy):
    flags = ompy.tmpdir / "flags"
    process = start(ompy, flags, *TCP, "--mca", "btl_tcp_handshake_timeout", str(TIMEOUT))
    socks: list[socket.socket] = []
    try:
        victim = pid_of(flags, 1)
        pid_of(flags, 0)
        (port,) = listening_ports(victim)
        limit = fd_count(victim) + 6
        hard = resource.prlimit(victim, resource.RLIMIT_NOFILE)[1]
        resource.prlimit(victim, resource.RLIMIT_NOFILE, (limit, hard))
        socks = strangers(port, 100)
        share = cpu_share(victim, 2.0)
        assert share < 0.25, f"rank 1 used {share:.0%} of a CPU while out of descriptors"
        for sock in socks:  # the strangers leave; the rank finishes with its low limit
            sock.close()
        socks = []
        time.sleep(TIMEOUT + 0.5)
    finally:
        _, err = finish(process, flags, socks)
    refusals = [line for line in err.splitlines() if "refused" in line]
    assert 1 <= len(refusals) <= 4, err
    assert any("listener paused" in line for line in refusals), err


def _ports(flags: Path) -> list[list[int]]:
    return [listening_ports(pid_of(flags, rank)) for rank in (0, 1)]


@pytest.mark.parametrize(
    ("params", "listens"),
    [
        ((), True),
        (("--mca", "btl_tcp_listener", "always"), True),
        (TCP, True),
    ],
    ids=["one-node-sm", "listener-always", "tcp-requested"],
)
def test_tcp_listens_only_when_some_peer_may_need_it(ompy, params, listens):
    """Every launched rank listens now: a job it spawns or accepts reaches it over tcp only
    (a one-node sm job without dynamic processes would not need it; see the component's
    docstring)."""
    flags = ompy.tmpdir / "flags"
    process = start(ompy, flags, *params)
    try:
        ports = _ports(flags)
    finally:
        with contextlib.suppress(Exception):
            finish(process, flags, [])
    if listens:
        assert all(ports), ports
    else:
        assert ports == [[], []], f"ranks of a one-node sm job listen on tcp ports {ports}"


def test_a_peer_busy_past_the_handshake_deadline_connects_again(ompy):
    program = Path(__file__).parent / "programs" / "slow_peer.py"
    # Without coll sm, nothing is sent during MPI_Init: the Isend opens the connection.
    params = [*TCP, "--mca", "coll", "^sm", "--mca", "btl_tcp_handshake_timeout", "0.3"]
    result = ompy.run(["-n", "2", *params, sys.executable, str(program), "1.5"], timeout=90)
    assert result.returncode == 0, result.stderr
    assert "no handshake within 0.3 s" in result.stderr, "the deadline was never reached"
    reports = {r["rank"]: r["got"] for r in map(json.loads, result.stdout.splitlines())}
    assert reports == {0: [0, 2, 4, 6], 1: [0, 1, 2, 3]}, result.stdout
