"""Fixtures for multi-host tests: hosts made of network namespaces, each running sshd.

- ``netns_cluster_factory`` (session): ``factory(nics=(2, 2, 1), sshd=True)`` builds (once per
  layout and session) one host per entry of ``nics`` with that many NICs, and an sshd on each;
  everything is removed at the end of the session and checked to be gone.
- ``cluster`` (session): the default layout, three hosts ``h1 h2 h3`` with two NICs each.
- ``hosts`` (per test): runs commands on the hosts of ``cluster`` with the test's marker and
  temporary directory, and checks after the test that no process of it is left on any host
  (anything in a host's namespace but its sshd), no marked process anywhere and no session
  directory in its temporary directory; ``hosts_on(multihost)`` does the same for any cluster.

The tests skip when not run as root (network namespaces need ``CAP_SYS_ADMIN``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from ..conftest import MARKER_VAR, SETTLE_SECONDS, marked_pids
from .netns import Cluster, Host, SetupError, end_processes
from .sshd import SshServers

OMPY = str(Path(sys.executable).with_name("ompy"))
DEFAULT_NICS = (2, 2, 2)


@attrs.define
class MultiHost:
    """A cluster of namespace hosts and (optionally) their ssh servers."""

    cluster: Cluster
    sshd: SshServers | None

    @property
    def hosts(self) -> list[Host]:
        return self.cluster.hosts

    @property
    def ssh(self) -> Path:
        """The ssh client wrapper to pass as ``--mca plm_ssh_agent``."""
        if self.sshd is None:
            raise RuntimeError("this cluster was built without sshd")
        return self.sshd.ssh

    def host(self, name: str) -> Host:
        return self.cluster.host(name)

    def stray_pids(self) -> dict[str, list[int]]:
        """Processes on the hosts other than their sshd servers, by host."""
        keep = self.sshd.server_pids() if self.sshd else set()
        stray = {h.name: [p for p in h.pids() if p not in keep] for h in self.hosts}
        return {name: pids for name, pids in stray.items() if pids}

    def teardown(self) -> None:
        if self.sshd is not None:
            self.sshd.stop()
        self.cluster.destroy()
        left = self.cluster.leftovers()
        assert not left, f"the namespace hosts left things behind: {left}"


def build(state_dir: Path, nics: Sequence[int], sshd: bool) -> MultiHost:
    """Build the hosts and servers, skipping (not failing) where namespaces are impossible."""
    if os.geteuid() != 0:
        pytest.skip("multi-host tests need root for network namespaces")
    try:
        cluster = Cluster.create(state_dir, nics)
    except SetupError as error:
        pytest.skip(f"cannot build network-namespace hosts here: {error}")
    try:
        servers = SshServers.start(cluster) if sshd else None
    except BaseException:
        cluster.destroy()
        raise
    return MultiHost(cluster, servers)


@pytest.fixture(scope="session")
def netns_cluster_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., MultiHost]]:
    """``factory(nics=(2, 2, 2), sshd=True)``: hosts of that layout, shared by the session."""
    built: dict[tuple[tuple[int, ...], bool], MultiHost] = {}

    def factory(nics: Sequence[int] = DEFAULT_NICS, sshd: bool = True) -> MultiHost:
        key = (tuple(nics), sshd)
        if key not in built:
            built[key] = build(tmp_path_factory.mktemp("multihost"), nics, sshd)
        return built[key]

    yield factory
    for multihost in built.values():
        multihost.teardown()


@pytest.fixture(scope="session")
def cluster(netns_cluster_factory: Callable[..., MultiHost]) -> MultiHost:
    """Three hosts ``h1 h2 h3`` with two NICs each and an sshd on each."""
    return netns_cluster_factory()


@attrs.define
class OnHosts:
    """Runs commands on the hosts for one test; every process gets the test's marker."""

    multihost: MultiHost
    marker: str
    tmpdir: Path

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("OMPY_MCA_CLI_NAMES", None)
        env.update({MARKER_VAR: self.marker, "TMPDIR": str(self.tmpdir)})
        env.update(extra or {})
        return env

    def start(
        self,
        host: str,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        stdin: int | None = subprocess.DEVNULL,
    ) -> subprocess.Popen[str]:
        """Start ``argv`` on ``host`` with pipes for stdout and stderr."""
        return subprocess.Popen(
            self.multihost.host(host).command(argv),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(env),
        )

    def run(
        self,
        host: str,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        input: str | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on ``host`` to completion (killed and failed after ``timeout`` s)."""
        process = self.start(host, argv, env=env, stdin=subprocess.PIPE)
        try:
            out, err = process.communicate(input or "", timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            pytest.fail(f"{' '.join(argv)} on {host} did not finish in {timeout} s:\n{err}")
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def ompy_argv(self, args: Sequence[str]) -> list[str]:
        """``ompy run ARGS`` launching through this cluster's ssh; the remote ranks get the
        test's marker and temporary directory (``-x``), as the local ones do."""
        agent = ["--mca", "plm_ssh_agent", str(self.multihost.ssh)]
        return [OMPY, "run", *agent, "-x", MARKER_VAR, "-x", "TMPDIR", *args]

    def ompy_run(
        self, host: str, args: Sequence[str], **kwargs: Any
    ) -> subprocess.CompletedProcess[str]:
        """``ompy run ARGS`` on ``host`` (see :meth:`ompy_argv`)."""
        return self.run(host, self.ompy_argv(args), **kwargs)


def check_clean(on_hosts: OnHosts) -> None:
    """Nothing of the test may be left on the hosts: processes, session directories."""
    multihost = on_hosts.multihost
    deadline = time.monotonic() + SETTLE_SECONDS
    while (multihost.stray_pids() or marked_pids(on_hosts.marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    stray = multihost.stray_pids()
    marked = marked_pids(on_hosts.marker)
    for pids in (*stray.values(), marked):
        end_processes(pids, grace=1.0)
    assert not stray, f"processes of the test survived on the hosts: {stray}"
    assert not marked, f"processes of the test survived it: {marked}"
    leftovers = sorted(p.name for p in on_hosts.tmpdir.iterdir() if p.name.startswith("ompy-"))
    assert not leftovers, f"session directories left behind: {leftovers}"


@pytest.fixture
def hosts_on(tmp_path: Path) -> Iterator[Callable[[MultiHost], OnHosts]]:
    """``hosts_on(multihost)``: commands on any cluster's hosts, checked as ``hosts`` is."""
    made: list[OnHosts] = []

    def make(multihost: MultiHost) -> OnHosts:
        tmpdir = tmp_path / f"tmp{len(made)}"
        tmpdir.mkdir()
        made.append(OnHosts(multihost, uuid.uuid4().hex, tmpdir))
        return made[-1]

    yield make
    for on_hosts in made:
        check_clean(on_hosts)


@pytest.fixture
def hosts(cluster: MultiHost, hosts_on: Callable[[MultiHost], OnHosts]) -> OnHosts:
    """Commands on ``cluster``'s hosts; afterwards nothing of the test may be left on them."""
    return hosts_on(cluster)
