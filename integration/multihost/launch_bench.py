"""Launch-time benchmark across namespace hosts: ``ompy run`` beside Open MPI's ``mpirun``.

Builds hosts ``h1 .. h4`` (network namespaces, one NIC each, an sshd on each: the fixtures of
this directory), then times from ``h1``, for 1, 2 and 4 hosts with 2 ranks per host, a job whose
ranks import MPI, pass one barrier on the world and exit: ``ompy run`` through the fixtures'
ssh wrapper (``plm_ssh_agent``) and Open MPI's ``mpirun`` (with mpi4py) through the same
wrapper (``plm_ssh_agent`` of PRRTE), the two alternating so both see the same machine load.
Beside the wall time it prints the CPU time each job used on all hosts together (the machine's
cores are shared by every host, so on a busy machine the CPU a launch needs decides its wall
time).  Wall time covers the launcher, the ssh logins, the daemons, every rank's interpreter and
imports, the wire-up (modex, fence), the barrier and the teardown. Prints numbers; not a test.

    sudo .venv/bin/python -m integration.multihost.launch_bench [--repeat 5] [--hosts 1,2,4]
        [--peer /tmp/ompy-bench-peer] [--per-host 2] [--ompy-only] [--no-compile]

``--peer`` is a prefix holding Open MPI 5's ``mpirun`` and a Python with mpi4py; its ``bin`` is
appended to the ``PATH`` the sshd servers give their sessions, so ``prted`` is found on every
host. Needs root (namespaces).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from .netns import Cluster
from .sshd import SshServers

OMPY = str(Path(sys.executable).with_name("ompy"))
OMPY_PROGRAM = "from ompy import MPI; MPI.COMM_WORLD.Barrier()"
PEER_PROGRAM = "from mpi4py import MPI; MPI.COMM_WORLD.Barrier()"
TICKS = os.sysconf("SC_CLK_TCK")


def ompy_argv(ssh: Path, hosts: str, extra: Sequence[str]) -> list[str]:
    return [
        *(OMPY, "run", "--mca", "plm_ssh_agent", str(ssh), "--host", hosts, *extra),
        *(sys.executable, "-c", OMPY_PROGRAM),
    ]


def mpirun_argv(peer: Path, ssh: Path, hosts: str, ranks: int) -> list[str]:
    return [
        *(str(peer / "bin" / "mpirun"), "--allow-run-as-root", "--prtemca", "plm_ssh_agent"),
        *(str(ssh), "--host", hosts, "-n", str(ranks)),
        *(str(peer / "bin" / "python"), "-c", PEER_PROGRAM),
    ]


def compile_bytecode() -> None:
    """Write the ``.pyc`` caches of this interpreter's packages (ompy's included), as pip does
    at install time for the peer's: a development environment with
    ``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module in every process (see
    ``docs/startup.md``), which is not what a user's installation does."""
    paths = [
        p
        for p in sys.path
        if p and Path(p).is_dir() and not p.startswith(sys.base_prefix)  # not the stdlib
    ]
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *paths],
        check=False,
        stdout=subprocess.DEVNULL,
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    )


def cpu_seconds(servers: SshServers) -> float:
    """CPU time (user + system) used so far by the processes this benchmark started and
    reaped, and by those the sshd servers reaped: a job's CPU wherever it ran, whatever else
    runs on the machine (its processes all end reaped by one or the other)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    for pid in servers.server_pids():
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[13]) + int(fields[14])) / TICKS  # cutime, cstime
    return total


def time_once(
    cluster: Cluster, servers: SshServers, argv: list[str], env: dict[str, str]
) -> tuple[float, float]:
    """Wall and CPU seconds of ``argv`` run on ``h1``; a failure stops the benchmark."""
    command = cluster.host("h1").command(argv)
    cpu = cpu_seconds(servers)
    started = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=300, check=False
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return elapsed, cpu_seconds(servers) - cpu


def row(label: str, times: list[float], cpu: list[float]) -> str:
    return (
        f"{label:<22} {min(times):7.3f} {statistics.median(times):8.3f} {max(times):7.3f}"
        f" {statistics.median(cpu):8.2f}   ({', '.join(f'{t:.2f}' for t in times)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--hosts", default="1,2,4", help="host counts to time (each <= 4)")
    parser.add_argument("--per-host", type=int, default=2)
    parser.add_argument("--peer", type=Path, default=Path("/tmp/ompy-bench-peer"))
    parser.add_argument(
        "--no-compile", action="store_true", help="do not compile bytecode caches first"
    )
    parser.add_argument("--ompy-only", action="store_true", help="do not run mpirun")
    parser.add_argument(
        "--ompy-args", default="", help="extra `ompy run` arguments (e.g. '--mca x y')"
    )
    args = parser.parse_args()
    counts = [int(item) for item in args.hosts.split(",")]
    with_peer = not args.ompy_only
    if with_peer and not (args.peer / "bin" / "mpirun").exists():
        raise SystemExit(f"no mpirun under {args.peer} (use --ompy-only or --peer)")
    if with_peer:
        os.environ["PATH"] = f"{os.environ.get('PATH', '')}:{args.peer / 'bin'}"
    env = dict(os.environ)
    env.pop("OMPY_MCA_CLI_NAMES", None)
    if not args.no_compile:
        compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="ompy-launch-bench-") as state:
        cluster = Cluster.create(Path(state), [1] * max(counts))
        try:
            servers = SshServers.start(cluster)
            try:
                run(cluster, servers, counts, args, with_peer=with_peer, env=env)
            finally:
                servers.stop()
        finally:
            cluster.destroy()


def run(
    cluster: Cluster,
    servers: SshServers,
    counts: list[int],
    args: argparse.Namespace,
    *,
    with_peer: bool,
    env: dict[str, str],
) -> None:
    ssh = servers.ssh
    extra = args.ompy_args.split()
    print(f"launch of {args.per_host} ranks per host, {args.repeat} runs each (after a warm-up)")
    print(f"{'':<22} {'min s':>7} {'median s':>8} {'max s':>7} {'CPU s':>8}   (wall times)")
    for count in counts:
        hosts = ",".join(f"h{i}:{args.per_host}" for i in range(1, count + 1))
        ranks = count * args.per_host
        jobs = {f"ompy run   {count} host(s)": ompy_argv(ssh, hosts, extra)}
        if with_peer:
            jobs[f"mpirun     {count} host(s)"] = mpirun_argv(args.peer, ssh, hosts, ranks)
        times: dict[str, list[float]] = {label: [] for label in jobs}
        cpu: dict[str, list[float]] = {label: [] for label in jobs}
        for argv in jobs.values():
            time_once(cluster, servers, argv, env)  # warm-up: page cache, sshd's first fork
        for _ in range(args.repeat):
            for label, argv in jobs.items():
                wall, used = time_once(cluster, servers, argv, env)
                times[label].append(wall)
                cpu[label].append(used)
        for label, measured in times.items():
            print(row(label, measured, cpu[label]), flush=True)
    hosts = ",".join(f"h{i}:{args.per_host}" for i in range(1, max(counts) + 1))
    program = [sys.executable, str(Path(__file__).parent / "programs" / "modex_sizes.py")]
    argv = [*ompy_argv(ssh, hosts, extra)[:-3], *program]
    done = subprocess.run(
        cluster.host("h1").command(argv),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the modex-size job failed:\n{done.stderr[-3000:]}")
    reports = sorted(
        (json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")),
        key=lambda report: report["rank"],
    )
    print("modex bytes each rank published (key: bytes):")
    for report in reports:
        total = sum(v for v in report["sizes"].values() if isinstance(v, int))
        print(f"  rank {report['rank']} on {report['host']}: {report['sizes']} = {total}")


if __name__ == "__main__":
    main()
