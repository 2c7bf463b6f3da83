"""One OpenSSH server per simulated host, with a key only the tests hold.

:class:`SshServers` generates a host key and a client key under the cluster's state
directory, starts ``sshd -D`` on port 22 of every host (each host is its own network
namespace, so every server has port 22 to itself) and writes ``ssh_config`` plus an ``ssh``
wrapper script: ``<state>/ssh h2 hostname`` run on ``h1`` prints ``h2``. Nothing in
``/etc/ssh`` or ``~/.ssh`` is read or changed. Remote commands get the ``PATH`` the tests run
with, so the test venv's interpreter and ``ompy`` are found.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import attrs

from .netns import Cluster, SetupError, end_processes, run

SSHD = Path("/usr/sbin/sshd")


def ensure_openssh() -> None:
    """Install openssh-server/-client with apt-get when they are missing (root only)."""
    if SSHD.exists() and shutil.which("ssh") and shutil.which("ssh-keygen"):
        return
    if shutil.which("apt-get") is None:
        raise SetupError("sshd is not installed and there is no apt-get to install it")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    command = ["apt-get", "-y", "-q", "-o", "DPkg::Lock::Timeout=300", "--no-install-recommends"]
    done = subprocess.run(
        [*command, "install", "openssh-server", "openssh-client"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise SetupError(f"apt-get install openssh-server failed: {done.stderr.strip()[-500:]}")


SSHD_CONFIG = """\
Port 22
ListenAddress 0.0.0.0
HostKey {state}/ssh_host_ed25519_key
PidFile none
AuthorizedKeysFile {state}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
AcceptEnv *
MaxStartups 100
MaxSessions 100
LogLevel VERBOSE
SetEnv "PATH={path}"
"""

SSH_CONFIG = """\
Host *
    User root
    Port 22
    IdentityFile {state}/id_ed25519
    IdentitiesOnly yes
    StrictHostKeyChecking no
    UserKnownHostsFile /dev/null
    GlobalKnownHostsFile /dev/null
    BatchMode yes
    LogLevel ERROR
    ConnectTimeout 10
"""


@attrs.define
class SshServers:
    """sshd on every host of ``cluster``; :attr:`ssh` is the client to use between them."""

    cluster: Cluster
    state_dir: Path
    servers: dict[str, subprocess.Popen[bytes]] = attrs.field(factory=dict)

    @property
    def ssh(self) -> Path:
        """A wrapper script: ``ssh -F <state>/ssh_config "$@"`` (for ``plm_ssh_agent``)."""
        return self.state_dir / "ssh"

    @property
    def config(self) -> Path:
        return self.state_dir / "ssh_config"

    @classmethod
    def start(cls, cluster: Cluster) -> SshServers:
        ensure_openssh()
        state = cluster.state_dir / "sshd"
        state.mkdir(parents=True, exist_ok=True)
        for key, comment in (("ssh_host_ed25519_key", "host"), ("id_ed25519", "client")):
            run(
                [
                    *("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"ompy-test-{comment}"),
                    *("-f", str(state / key)),
                ]
            )
        shutil.copy(state / "id_ed25519.pub", state / "authorized_keys")
        (state / "authorized_keys").chmod(0o600)
        (state / "sshd_config").write_text(
            SSHD_CONFIG.format(state=state, path=os.environ.get("PATH", "/usr/bin:/bin"))
        )
        (state / "ssh_config").write_text(SSH_CONFIG.format(state=state))
        (state / "ssh").write_text(f'#!/bin/sh\nexec ssh -F {state}/ssh_config "$@"\n')
        (state / "ssh").chmod(0o755)
        # Debian's sshd needs its privilege-separation directory (a system path other sshds
        # share: created when missing, never removed).
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        run([str(SSHD), "-t", "-f", str(state / "sshd_config")])
        servers = cls(cluster, state)
        try:
            for host in cluster.hosts:
                log = state / f"sshd-{host.name}.log"
                servers.servers[host.name] = subprocess.Popen(
                    host.command(
                        [str(SSHD), "-D", "-f", str(state / "sshd_config"), "-E", str(log)]
                    ),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            servers.wait_ready()
        except BaseException:
            servers.stop()
            raise
        return servers

    def wait_ready(self, timeout: float = 20.0) -> None:
        """Wait until a login from the first host to every host (itself included) works."""
        first = self.cluster.hosts[0]
        for host in self.cluster.hosts:
            deadline = time.monotonic() + timeout
            while True:
                done = subprocess.run(
                    first.command([str(self.ssh), host.name, "hostname"]),
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode == 0 and done.stdout.strip() == host.name:
                    break
                server = self.servers[host.name]
                if server.poll() is not None or time.monotonic() > deadline:
                    log = (self.state_dir / f"sshd-{host.name}.log").read_text(errors="replace")
                    raise SetupError(
                        f"no ssh login from {first.name} to {host.name}: {done.stderr.strip()}\n"
                        f"sshd log:\n{log[-2000:]}"
                    )
                time.sleep(0.1)

    def server_pids(self) -> set[int]:
        return {p.pid for p in self.servers.values() if p.poll() is None}

    def stop(self) -> None:
        """End the servers (and any session still open on them)."""
        end_processes([p.pid for p in self.servers.values() if p.poll() is None])
        for process in self.servers.values():
            process.wait(timeout=10)
        for host in self.cluster.hosts:
            end_processes(host.pids())
