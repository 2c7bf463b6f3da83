"""Bandwidth between two hosts over one NIC and over two, each rate-limited (root only).

Builds two network-namespace hosts with two NICs each (the project's multi-host fixtures,
``integration/multihost``), caps every NIC's egress with a tbf qdisc (``--rate``, default
200mbit), starts sshd on both and runs ``ompy run --host h1:1,h2:1`` with a streaming program:
rank 0 sends ``--size`` byte messages to rank 1 for ``--seconds``, rank 1 acknowledges each.
Run once with ``btl_tcp_if_include eth0`` (one NIC) and once with both, and print MB/s and the
ratio (the aim is >= 1.8).  A benchmark, not a test: it prints numbers.

    python packages/components/btl-tcp/benchmarks/nics.py [--rate 200mbit] [--size 4194304]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT))

from integration.multihost.netns import Cluster, run  # noqa: E402
from integration.multihost.sshd import SshServers  # noqa: E402

OMPY = str(Path(sys.executable).with_name("ompy"))
STREAM = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    from ompy import MPI
    comm = MPI.COMM_WORLD
    size, seconds = int(sys.argv[1]), float(sys.argv[2])
    buf = np.ones(size, np.uint8)
    ack = np.zeros(1, np.uint8)
    for _ in range(2):  # warm-up: connections, registrations
        if comm.rank == 0:
            comm.Send(buf, 1, 1); comm.Recv(ack, 1, 2)
        else:
            comm.Recv(buf, 0, 1); comm.Send(ack, 0, 2)
    count, start = 0, time.perf_counter()
    while True:
        go = np.array([time.perf_counter() - start < seconds], np.uint8)
        comm.Bcast(go, 0)
        if not go[0]:
            break
        if comm.rank == 0:
            comm.Send(buf, 1, 1); comm.Recv(ack, 1, 2)
        else:
            comm.Recv(buf, 0, 1); comm.Send(ack, 0, 2)
        count += 1
    elapsed = time.perf_counter() - start
    if comm.rank == 0:
        print(json.dumps({"messages": count, "seconds": elapsed,
                          "mbytes_per_s": count * size / elapsed / 1e6}))
    """
)


def limit(cluster: Cluster, rate: str) -> None:
    for host in cluster.hosts:
        for nic in range(host.nics):
            run(
                [
                    *("ip", "netns", "exec", host.namespace, "tc", "qdisc", "add"),
                    *("dev", f"eth{nic}", "root", "tbf", "rate", rate),
                    *("burst", "256kb", "latency", "100ms"),
                ]
            )


def measure(cluster, ssh: Path, program: Path, args, include: str) -> dict:
    argv = [
        *(OMPY, "run", "--host", "h1:1,h2:1"),
        *("--mca", "plm_ssh_agent", str(ssh), "--mca", "btl", "self,tcp"),
        *("--mca", "btl_tcp_if_include", include),
        *(sys.executable, str(program), str(args.size), str(args.seconds)),
    ]
    done = subprocess.run(
        cluster.host("h1").command(argv),
        capture_output=True,
        text=True,
        timeout=args.seconds * 4 + 120,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"ompy run failed ({include}):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="200mbit", help="tbf rate of every NIC (tc syntax)")
    parser.add_argument("--size", type=int, default=4 << 20, help="message size in bytes")
    parser.add_argument("--seconds", type=float, default=8.0, help="seconds per measurement")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ompy-bench-nics-") as state:
        cluster = Cluster.create(Path(state), (2, 2))
        servers = None
        try:
            limit(cluster, args.rate)
            servers = SshServers.start(cluster)
            program = Path(state) / "stream.py"
            program.write_text(STREAM)
            one = measure(cluster, servers.ssh, program, args, "eth0")
            two = measure(cluster, servers.ssh, program, args, "eth0,eth1")
        finally:
            if servers is not None:
                servers.stop()
            cluster.destroy()
    print(f"rate per NIC: {args.rate}, message size: {args.size} bytes")
    print(f"one NIC (eth0):       {one['mbytes_per_s']:8.1f} MB/s ({one['messages']} messages)")
    print(f"two NICs (eth0,eth1): {two['mbytes_per_s']:8.1f} MB/s ({two['messages']} messages)")
    print(f"ratio: {two['mbytes_per_s'] / one['mbytes_per_s']:.2f}x (aim >= 1.8x)")


if __name__ == "__main__":
    main()
