"""Fixtures that start a private Slurm cluster (see :mod:`.cluster`) and run jobs in it.

``slurm_one`` is a one-node cluster and ``slurm_three`` a three-node one (three slurmd daemons
on this machine); each starts once per test session, on first use, and is stopped at the end
of the session, which then checks that none of its processes is left.  ``slurm_jobs(cluster)``
runs Slurm clients for one test with the test's marker (the ``ompy`` fixture's), so the
``ompy`` fixture's own check proves that no rank, daemon or launcher of the test survived it.
Tests are skipped, not failed, where Slurm cannot run (not root).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence

import attrs
import pytest

from integration.conftest import MARKER_VAR, Launcher

from .cluster import SlurmCluster, SlurmUnavailableError


def _cluster(nodes: int) -> Iterator[SlurmCluster]:
    cluster = SlurmCluster(nodes=nodes)
    try:
        cluster.start()
    except SlurmUnavailableError as why:
        pytest.skip(f"no private Slurm cluster here: {why}")
    try:
        yield cluster
    finally:
        cluster.stop()
        left = cluster.leftovers()
        assert not left, f"processes of the Slurm cluster outlived it: {left}"


@pytest.fixture(scope="session")
def slurm_one() -> Iterator[SlurmCluster]:
    """A one-node Slurm cluster (the node is named after this machine)."""
    yield from _cluster(1)


@pytest.fixture(scope="session")
def slurm_three() -> Iterator[SlurmCluster]:
    """A three-node Slurm cluster, nodes ``n1``, ``n2``, ``n3``, 8 CPUs each."""
    yield from _cluster(3)


@attrs.define
class SlurmJobs:
    """Runs Slurm clients (srun, salloc, sbatch) of one cluster for one test."""

    cluster: SlurmCluster
    launcher: Launcher

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = self.cluster.env(
            {MARKER_VAR: self.launcher.marker, "TMPDIR": str(self.launcher.tmpdir)}
        )
        env.pop("OMPY_MCA_CLI_NAMES", None)
        env.update(extra or {})
        return env

    def run(
        self, args: Sequence[str], *, timeout: float = 90, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a client command to completion (failing the test after ``timeout`` seconds)."""
        process = subprocess.Popen(
            self.cluster.on_host(args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(env),
        )
        self.launcher.launcher_pids.append(process.pid)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            self.cluster.client("scancel", "--quiet", "--user=root")
            pytest.fail(f"{' '.join(args)} did not finish in {timeout} s:\n{err}")
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.fixture
def slurm_jobs(ompy: Launcher):
    """``slurm_jobs(cluster)`` gives a :class:`SlurmJobs` sharing the ``ompy`` fixture's checks."""

    def make(cluster: SlurmCluster) -> SlurmJobs:
        return SlurmJobs(cluster, ompy)

    return make
