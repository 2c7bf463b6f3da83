"""A private Slurm cluster for tests: munged, slurmctld and one slurmd per node, run by hand.

:class:`SlurmCluster` writes its configuration under one state directory, starts the daemons
(no systemd, no cgroups) and stops exactly what it started.  Two layouts:

* one node, named after this machine;
* ``nodes=K`` with K > 1: K slurmd daemons on this machine (Slurm's "multiple slurmd" mode),
  nodes ``n1..nK`` on their own ports.  They share the machine's host name and addresses, so
  each is a separate node only for Slurm and for ompy (which tells nodes apart by node id);
* ``hosts=[...]``: one node per network-namespace host of ``integration/multihost/netns.py``
  (``h1..hN``, each slurmd with the host's name and address, slurmctld on the first).  Slurm's
  clients must then run on a host too: :meth:`SlurmCluster.on_host` makes their argv.

Every daemon gets :data:`TAG_VAR` in its environment; slurmstepd and the tasks it starts
inherit it, so :meth:`SlurmCluster.stop` finds whatever the cluster started, even after a
daemon lost its pid file, without matching processes by name.  The ports are picked free at
start.  Everything needs root; missing Debian packages are installed with apt-get.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

#: Environment marker of every process the cluster starts (value: the state directory).
TAG_VAR = "OMPY_SLURM_FIXTURE"
#: Debian packages that provide the daemons and clients, by the file that shows each is there.
PACKAGES = {
    "/usr/sbin/slurmctld": "slurmctld",
    "/usr/sbin/slurmd": "slurmd",
    "/usr/bin/srun": "slurm-client",
    "/usr/sbin/munged": "munge",
}


class SlurmUnavailableError(RuntimeError):
    """Slurm cannot run here (not root, packages missing and not installable)."""


def ensure_installed() -> None:
    """Install the Slurm and munge packages with apt-get if any of them is missing."""
    missing = sorted({pkg for path, pkg in PACKAGES.items() if not Path(path).exists()})
    if not missing:
        return
    if os.geteuid() != 0:
        raise SlurmUnavailableError(f"Slurm packages missing ({', '.join(missing)}) and not root")
    apt = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", "--no-install-recommends"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = subprocess.run(
        [*apt, "install", *missing], env=env, capture_output=True, text=True, check=False
    )
    if install.returncode != 0:
        subprocess.run(["apt-get", "-q", "update"], env=env, capture_output=True, check=False)
        install = subprocess.run(
            [*apt, "install", *missing], env=env, capture_output=True, text=True, check=False
        )
    if install.returncode != 0:
        raise SlurmUnavailableError(
            f"apt-get install {' '.join(missing)} failed:\n{install.stderr}"
        )


#: Where the daemons' ports are drawn from: below the kernel's ephemeral range (32768 and up by
#: default), so that no outgoing connection of another process can take a port between the
#: moment it is picked and the moment a daemon binds it.
PORT_RANGE = range(20000, 32000)


def free_ports(count: int) -> list[int]:
    """``count`` TCP ports of :data:`PORT_RANGE` nobody listens on right now, on any address
    (held open together, then released)."""
    holders: list[socket.socket] = []
    try:
        while len(holders) < count:
            sock = socket.socket()
            try:
                sock.bind(("", PORT_RANGE[secrets.randbelow(len(PORT_RANGE))]))
            except OSError:
                sock.close()
                continue
            holders.append(sock)
        return [sock.getsockname()[1] for sock in holders]
    finally:
        for sock in holders:
            sock.close()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def tagged_pids(tag: str) -> list[int]:
    """Live processes whose environment carries ``TAG_VAR=tag``."""
    needle = f"{TAG_VAR}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def _terminate(pids: Sequence[int], grace: float) -> None:
    """SIGTERM ``pids``, wait up to ``grace`` seconds, SIGKILL whatever is left."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@attrs.define
class SlurmCluster:
    """One private Slurm cluster; :meth:`start` it, use :meth:`env` for clients, :meth:`stop`."""

    nodes: int = 1
    cpus: int = 8
    #: Network-namespace hosts (``netns.Host``) to run one node on each, or None.
    hosts: Sequence[Any] | None = None
    state: Path = attrs.field(factory=lambda: Path(tempfile.mkdtemp(prefix="ompy-slurm-")))
    node_names: list[str] = attrs.field(factory=list)
    started: bool = False

    @property
    def conf(self) -> Path:
        return self.state / "slurm.conf"

    @property
    def tag(self) -> str:
        return str(self.state)

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """An environment for Slurm clients (srun, salloc, sbatch, squeue) of this cluster."""
        env = {key: value for key, value in os.environ.items() if not key.startswith("SLURM_")}
        env["SLURM_CONF"] = str(self.conf)
        env.update(extra or {})
        return env

    def on_host(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as a Slurm client must run: on the first host in namespace mode."""
        return list(argv) if self.hosts is None else self.hosts[0].command(argv)

    def client(self, *args: str, timeout: float = 30) -> str:
        """Run a Slurm client command and return its stdout (raising on failure)."""
        done = subprocess.run(
            self.on_host(args),
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done.stdout

    # -- life cycle ----------------------------------------------------------------------------

    def start(self, timeout: float = 60) -> SlurmCluster:
        """Write the configuration, start munged, slurmctld and the slurmds, wait until idle."""
        if os.geteuid() != 0:
            raise SlurmUnavailableError("a private Slurm cluster needs root")
        ensure_installed()
        host = socket.gethostname().split(".")[0]
        if self.hosts is not None:
            self.nodes = len(self.hosts)
            self.node_names = [h.name for h in self.hosts]
        elif self.nodes == 1:
            self.node_names = [host]
        else:
            self.node_names = [f"n{i}" for i in range(1, self.nodes + 1)]
        for sub in ("munge", "state", "log", "run", "spool", "tmp"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o755)
        (self.state / "munge").chmod(0o755)  # munged wants its socket directory searchable
        for name in self.node_names:
            (self.state / "spool" / name).mkdir(exist_ok=True)
            (self.state / "tmp" / name).mkdir(exist_ok=True)
        if self.hosts is not None:  # each host has its own ports
            ctld_port, *node_ports = [6817] + [6818] * self.nodes
        else:
            ctld_port, *node_ports = free_ports(1 + self.nodes)
        self._write_config(host, ctld_port, node_ports)
        self.started = True
        try:
            self._start_munge()
            self._daemon("slurmctld", 0, "slurmctld", "-c", "-f", str(self.conf))
            for index, name in enumerate(self.node_names):
                self._daemon(f"slurmd-{name}", index, "slurmd", "-f", str(self.conf), "-N", name)
            self._wait_idle(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Cancel every job, stop the daemons and remove the state directory."""
        if not self.started:
            shutil.rmtree(self.state, ignore_errors=True)
            return
        with contextlib.suppress(Exception):
            subprocess.run(
                self.on_host(["scancel", "--quiet", "--full", "--user=root"]),
                env=self.env(),
                capture_output=True,
                timeout=10,
                check=False,
            )
        pids = [self._pid(f"slurmd-{name}") for name in self.node_names]
        _terminate([pid for pid in pids if pid], grace=15)
        ctld = self._pid("slurmctld")
        if ctld:
            _terminate([ctld], grace=15)
        _terminate(tagged_pids(self.tag), grace=5)
        munge = self._pid("munged")
        if munge:
            _terminate([munge], grace=5)
        self.started = False
        shutil.rmtree(self.state, ignore_errors=True)

    def leftovers(self) -> list[int]:
        """Processes of this cluster still alive (after :meth:`stop`: must be none)."""
        return tagged_pids(self.tag)

    def log(self, name: str) -> str:
        """The tail of a daemon's log (``slurmctld``, ``slurmd-<node>``, ``munged``)."""
        path = self.state / "log" / f"{name}.log"
        with contextlib.suppress(OSError):
            return "".join(path.read_text(errors="replace").splitlines(True)[-40:])
        return ""

    # -- pieces --------------------------------------------------------------------------------

    def _pid(self, name: str) -> int | None:
        path = self.state / "run" / f"{name}.pid"
        with contextlib.suppress(OSError, ValueError):
            pid = int(path.read_text().strip())
            return pid if _alive(pid) else None
        return None

    def _write_config(self, host: str, ctld_port: int, node_ports: list[int]) -> None:
        s = self.state
        lines = [
            "# a private test cluster written by ompy's integration fixture",
            f"ClusterName=ompy{secrets.token_hex(3)}",
            f"SlurmctldHost={self._ctld_host(host)}",
            f"SlurmctldPort={ctld_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            f"AuthInfo=socket={s}/munge/socket",
            f"StateSaveLocation={s}/state",
            f"SlurmdSpoolDir={s}/spool/%n",
            f"TmpFS={s}/tmp/%n",
            f"SlurmctldPidFile={s}/run/slurmctld.pid",
            f"SlurmdPidFile={s}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={s}/log/slurmctld.log",
            f"SlurmdLogFile={s}/log/slurmd-%n.log",
            f"PlugStackConfig={s}/plugstack.conf",
            "MailProg=/bin/true",
            # no cgroups, no task binding: processes are tracked through /proc
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SwitchType=switch/none",
            "MpiDefault=none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "SchedulerType=sched/builtin",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            # nodes may advertise more CPUs than the machine has
            "SlurmdParameters=config_overrides",
            "ReturnToService=2",
            "InactiveLimit=0",
            "KillWait=3",
            "MinJobAge=5",
        ]
        for index, (name, port) in enumerate(zip(self.node_names, node_ports, strict=True)):
            if self.hosts is not None:
                where = f"NodeAddr={self.hosts[index].address(0)}"
            else:
                where = f"NodeAddr=127.0.0.1 NodeHostname={host}"
            lines.append(f"NodeName={name} {where} Port={port} CPUs={self.cpus} State=UNKNOWN")
        lines.append(
            f"PartitionName=test Nodes={','.join(self.node_names)} Default=YES "
            "MaxTime=INFINITE State=UP OverSubscribe=YES"
        )
        self.conf.write_text("\n".join(lines) + "\n")
        (s / "plugstack.conf").write_text("")
        (s / "cgroup.conf").write_text("CgroupPlugin=autodetect\nIgnoreSystemdOnFailure=yes\n")

    def _ctld_host(self, host: str) -> str:
        if self.hosts is not None:
            return f"{self.hosts[0].name}({self.hosts[0].address(0)})"
        return f"{host}(127.0.0.1)"

    def _tagged_env(self) -> dict[str, str]:
        env = self.env()
        env[TAG_VAR] = self.tag
        return env

    def _start_munge(self) -> None:
        munge = self.state / "munge"
        key = munge / "key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        self._spawn(
            "munged",
            "munged",
            f"--key-file={key}",
            f"--socket={munge}/socket",
            f"--pid-file={self.state}/run/munged.pid",
            f"--log-file={self.state}/log/munged.log",
            f"--seed-file={munge}/seed",
        )

    def _daemon(self, name: str, host: int, *command: str) -> None:
        """Start a Slurm daemon, on host number ``host`` in namespace mode."""
        if self.hosts is not None:
            self._spawn(name, *self.hosts[host].command(command))
        else:
            self._spawn(name, *command)

    def _spawn(self, name: str, *command: str) -> None:
        """Run a daemon that forks into the background itself; fail with its output if not."""
        done = subprocess.run(
            command,
            env=self._tagged_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{name} did not start ({done.returncode}): {done.stderr}{self.log(name)}"
            )

    def _wait_idle(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        states = ""
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                states = self.client("sinfo", "-h", "-N", "-o", "%N %T", timeout=10)
                lines = states.split()[1::2]
                if len(lines) == self.nodes and set(lines) == {"idle"}:
                    return
            time.sleep(0.2)
        raise RuntimeError(
            f"the Slurm nodes did not become idle within {timeout} s: {states!r}\n"
            f"{self.log('slurmctld')}"
        )
