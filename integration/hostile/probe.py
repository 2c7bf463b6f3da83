"""What a hostile-client test needs to watch a running job from outside: its processes'
listening ports, descriptors, memory and CPU time, and a way to act as another user.

Everything here reads ``/proc``; acting as another user needs root (the test is skipped
otherwise), because only a second uid shows what *another* local user can do to a job.
"""

from __future__ import annotations

import json
import os
import pwd
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TCP_LISTEN = "0A"


def wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"{path} did not appear within {timeout} s")
        time.sleep(0.02)


def pid_of(flags: Path, rank: int) -> int:
    wait_for(flags / f"ready{rank}")
    return int((flags / f"pid{rank}").read_text())


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def listening_ports(pid: int) -> list[int]:
    """TCP (IPv4) ports the process listens on."""
    inodes = socket_inodes(pid)
    ports = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == TCP_LISTEN and fields[9] in inodes:
            ports.append(int(fields[1].split(":")[1], 16))
    return sorted(ports)


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of every thread of the process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_share(pid: int, seconds: float, during: Callable[[], Any] | None = None) -> float:
    """The fraction of one CPU the process used over ``seconds`` (``during`` runs meanwhile)."""
    start_cpu, start = cpu_seconds(pid), time.monotonic()
    if during is not None:
        during()
    left = seconds - (time.monotonic() - start)
    if left > 0:
        time.sleep(left)
    return (cpu_seconds(pid) - start_cpu) / (time.monotonic() - start)


def as_other_user(action: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Run ``action()`` in a child process as user ``nobody``; its JSON-able result."""
    if os.geteuid() != 0:
        pytest.skip("acting as another local user needs root")
    nobody = pwd.getpwnam("nobody")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the attacker
        code = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            result = {"ok": action()}
        except BaseException as error:  # reported to the test
            result = {"error": repr(error)}
            code = 1
        finally:
            os.write(write, json.dumps(result).encode())
            os._exit(code)
    os.close(write)
    chunks = []
    deadline = time.monotonic() + timeout
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
        if time.monotonic() > deadline:
            break
    os.close(read)
    os.waitpid(pid, 0)
    outcome = json.loads(b"".join(chunks) or b'{"error": "no answer"}')
    if "error" in outcome:
        pytest.fail(f"the other user's action failed: {outcome['error']}")
    return outcome["ok"]
