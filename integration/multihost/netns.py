"""Hosts made of Linux network namespaces, so multi-host tests run on one machine.

A :class:`Cluster` is ``n`` hosts ``h1 .. hn``. Each host is a network namespace with loopback
and one or more NICs ``eth0, eth1, ...``; NIC ``k`` of host ``i`` has the address
``10.77.k.i/24`` and is a veth pair whose other end sits on bridge ``br<k>`` in a separate
"switch" namespace, so NIC ``k`` of every host is one subnet. Nothing is configured in the
machine's own namespace, so two clusters (two helpers, two test sessions) can use the same
addresses at the same time: the namespace names carry a random tag.

:meth:`Host.command` turns an argv into one that runs "on" the host: in its network namespace,
with its own hostname (``h<i>``, in a private UTS namespace) and an ``/etc/hosts`` naming every
host and NIC (bind-mounted in a private mount namespace). Everything else (files, ``/dev/shm``,
pids) is the machine's, which is why a multi-host test must check that its traffic really
crossed the NICs (:meth:`Cluster.nic_counters`).

Needs root (``CAP_SYS_ADMIN``, ``CAP_NET_ADMIN``) and ``ip``, ``unshare``, ``nsenter``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import attrs

NETWORK = "10.77"
#: Namespace names of a cluster: ``ompy-<pid of its creator>r<random>-h<i>`` (and ``-sw``).
NAME = re.compile(r"^ompy-(\d+)r[0-9a-f]{4}-(h\d+|sw)$")
RUN_NETNS = Path("/run/netns")
ETC_NETNS = Path("/etc/netns")


class SetupError(RuntimeError):
    """The namespaces could not be built (no privileges, missing tools, ...)."""


def run(argv: Sequence[str], *, timeout: float = 30) -> str:
    """Run a set-up command; its failure is a :class:`SetupError` quoting its stderr."""
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SetupError(f"{' '.join(argv)}: {error}") from error
    if done.returncode != 0:
        raise SetupError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return done.stdout


def namespace_pids(namespace: str) -> list[int]:
    """Pids of the live processes whose network namespace is ``namespace``."""
    target = RUN_NETNS / namespace
    try:
        wanted = os.stat(target)
    except OSError:
        return []
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            netns = os.stat(entry / "ns" / "net")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if (netns.st_dev, netns.st_ino) == (wanted.st_dev, wanted.st_ino) and state != "Z":
            pids.append(int(entry.name))
    return pids


def end_processes(pids: Sequence[int], grace: float = 5.0) -> None:
    """SIGTERM ``pids``, wait up to ``grace`` seconds, then SIGKILL those still alive."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if not [pid for pid in pids if _alive(pid)]:
                return
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def sweep_stale() -> list[str]:
    """Remove the namespaces of clusters whose creating process is gone (a killed test run):
    end what still runs in them, delete them and their ``/etc/netns`` files."""
    removed = []
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    for name in (line.split()[0] for line in listing.stdout.splitlines() if line.strip()):
        match = NAME.match(name)
        if match is None or _alive(int(match.group(1))):
            continue
        end_processes(namespace_pids(name))
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
        shutil.rmtree(ETC_NETNS / name, ignore_errors=True)
        removed.append(name)
    return removed


@attrs.frozen
class Host:
    """One simulated host: a network namespace with a name, NICs and a hosts file."""

    index: int
    name: str
    namespace: str
    nics: int
    hosts_file: Path

    def address(self, nic: int = 0) -> str:
        """The IPv4 address of NIC ``nic`` (``eth<nic>``)."""
        if not 0 <= nic < self.nics:
            raise ValueError(f"{self.name} has {self.nics} NIC(s), not a NIC {nic}")
        return f"{NETWORK}.{nic}.{self.index}"

    @property
    def addresses(self) -> tuple[str, ...]:
        return tuple(self.address(k) for k in range(self.nics))

    def command(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as run on this host (its network, hostname and /etc/hosts).

        The chain ``unshare`` → ``nsenter`` → ``sh`` → program only execs, so the pid of the
        process started from the returned argv is the program's own pid.
        """
        return [
            "unshare",
            "--mount",
            "--uts",
            "--propagation",
            "private",
            "--",
            "nsenter",
            f"--net={RUN_NETNS / self.namespace}",
            "--",
            "sh",
            "-c",
            'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"',
            "on-host",
            str(self.hosts_file),
            self.name,
            *argv,
        ]

    def pids(self) -> list[int]:
        """Pids of every live process on this host (in its network namespace)."""
        return namespace_pids(self.namespace)


@attrs.define
class Cluster:
    """Hosts with ``nics[i]`` NICs each: built by :meth:`create`, removed by :meth:`destroy`."""

    tag: str
    state_dir: Path
    hosts: list[Host]
    switch: str
    created_etc_netns: bool = False

    @classmethod
    def create(cls, state_dir: Path, nics: Sequence[int]) -> Cluster:
        """Build one host per entry of ``nics`` (its NIC count, 1..4), connected by bridges."""
        if not nics or any(not 1 <= k <= 4 for k in nics):
            raise ValueError(f"nics must list 1..4 NICs per host, got {list(nics)!r}")
        if os.geteuid() != 0:
            raise SetupError("network namespaces need root")
        for tool in ("ip", "unshare", "nsenter", "mount"):
            if shutil.which(tool) is None:
                raise SetupError(f"'{tool}' is not installed")
        sweep_stale()
        tag = f"{os.getpid()}r{secrets.token_hex(2)}"
        state_dir.mkdir(parents=True, exist_ok=True)
        hosts = [
            Host(i, f"h{i}", f"ompy-{tag}-h{i}", k, state_dir / "hosts")
            for i, k in enumerate(nics, start=1)
        ]
        cluster = cls(tag, state_dir, hosts, f"ompy-{tag}-sw")
        try:
            cluster._build()
        except BaseException:
            cluster.destroy()
            raise
        return cluster

    def _build(self) -> None:
        run(["ip", "netns", "add", self.switch])
        run(["ip", "-n", self.switch, "link", "set", "lo", "up"])
        for k in range(max(h.nics for h in self.hosts)):
            run(["ip", "-n", self.switch, "link", "add", f"br{k}", "type", "bridge"])
            run(["ip", "-n", self.switch, "link", "set", f"br{k}", "up"])
        lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
        for host in self.hosts:
            ns = host.namespace
            run(["ip", "netns", "add", ns])
            run(["ip", "-n", ns, "link", "set", "lo", "up"])
            names = [host.name]
            for k in range(host.nics):
                port = f"p{host.index}-{k}"
                # Both ends are created inside their namespaces: nothing appears in the
                # machine's own namespace, even for a moment.
                run(
                    [
                        *("ip", "link", "add", f"eth{k}", "netns", ns, "type", "veth"),
                        *("peer", "name", port, "netns", self.switch),
                    ]
                )
                run(["ip", "-n", self.switch, "link", "set", port, "master", f"br{k}", "up"])
                run(["ip", "-n", ns, "addr", "add", f"{host.address(k)}/24", "dev", f"eth{k}"])
                run(["ip", "-n", ns, "link", "set", f"eth{k}", "up"])
                lines.append(f"{host.address(k)} {' '.join(names)} {host.name}-nic{k}")
                names = []
        (self.state_dir / "hosts").write_text("\n".join(lines) + "\n")
        # `ip netns exec` reads /etc/netns/<ns>/hosts, so plain ip-netns users resolve too.
        self.created_etc_netns = not ETC_NETNS.exists()
        for host in self.hosts:
            (ETC_NETNS / host.namespace).mkdir(parents=True, exist_ok=True)
            shutil.copy(self.state_dir / "hosts", ETC_NETNS / host.namespace / "hosts")

    def host(self, name: str) -> Host:
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(f"no host {name!r} (hosts: {', '.join(h.name for h in self.hosts)})")

    def namespaces(self) -> list[str]:
        return [self.switch, *(h.namespace for h in self.hosts)]

    def nic_counters(self) -> dict[tuple[str, str], tuple[int, int]]:
        """``(host, nic) -> (rx_bytes, tx_bytes)`` of every host NIC (loopback excluded)."""
        counters = {}
        for host in self.hosts:
            links = json.loads(run(["ip", "-n", host.namespace, "-j", "-s", "link", "show"]))
            for link in links:
                if link["ifname"].startswith("eth"):
                    stats = link["stats64"]
                    counters[(host.name, link["ifname"])] = (
                        stats["rx"]["bytes"],
                        stats["tx"]["bytes"],
                    )
        return counters

    def leftovers(self) -> list[str]:
        """What of this cluster still exists (empty after :meth:`destroy`)."""
        found = []
        existing = set(run(["ip", "netns", "list"]).split())
        for ns in self.namespaces():
            if ns in existing:
                found.append(f"namespace {ns}")
            if (ETC_NETNS / ns).exists():
                found.append(f"{ETC_NETNS / ns}")
            pids = namespace_pids(ns)
            if pids:
                found.append(f"processes in {ns}: {pids}")
        return found

    def destroy(self) -> None:
        """End every process on the hosts, then remove the namespaces and their files."""
        for ns in self.namespaces():
            end_processes(namespace_pids(ns))
        existing = set(
            subprocess.run(
                ["ip", "netns", "list"], capture_output=True, text=True, check=False
            ).stdout.split()
        )
        for ns in self.namespaces():
            if ns in existing:
                subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
            shutil.rmtree(ETC_NETNS / ns, ignore_errors=True)
        if self.created_etc_netns:
            with contextlib.suppress(OSError):
                ETC_NETNS.rmdir()
