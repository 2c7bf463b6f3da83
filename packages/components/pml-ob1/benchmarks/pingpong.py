"""Ping-pong through the ob1 PML: latency and bandwidth over btl/self, btl/sm and btl/tcp.

    python pingpong.py self            # one process sends to itself (isend + irecv + wait)
    python pingpong.py tcp [--links N] # two processes on loopback, started by this script
    python pingpong.py sm              # two processes over shared memory, started by this script
    python pingpong.py tcp --sizes 65536,131072 --mca btl_tcp_min_rdma_pipeline_size 0

Prints one line per message size: half the round-trip time in microseconds and the bandwidth
in MB/s.  Uses the PML exactly as the MPI layer does (PmlContext, pml selection, add_procs,
add_comm), with a directory modex instead of the run-time.  Numbers, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from ompy.ompi.datatype.buffer import parse_buffer
from ompy.ompi.mca.pml import SendMode
from ompy.ompi.mca.pml import framework as pml_framework
from ompy.ompi.mca.pml.context import PmlContext
from ompy.opal.mca import open_framework
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.params import Registry
from ompy.opal.modex import DirectoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

SIZES = [0, 8, 1024, 16 * 1024, 64 * 1024, 256 * 1024, 1 << 20, 4 << 20, 16 << 20]
STANDARD = SendMode.STANDARD


class Comm:
    def __init__(self, rank: int, size: int) -> None:
        self.context_id, self.rank, self.size = 0, rank, size
        self.world_ranks = self.remote_world_ranks = tuple(range(size))
        self.pml_state = None


def setup(rank: int, size: int, directory: str, btl: str, params: dict):
    environ = {
        "OMPY_MCA_btl": btl,
        "OMPY_MCA_btl_tcp_if_include": "lo",
        "OMPY_MCA_btl_sm_ring_count": str(size),
    }
    environ.update({f"OMPY_MCA_{k}": str(v) for k, v in params.items()})
    registry = Registry(environ=environ, files=[])
    engine = ProgressEngine(spin_count=10_000)
    modex = DirectoryModex(directory, rank, size)
    procs = [Proc(f"bench{os.getppid()}", r, local_rank=r) for r in range(size)]
    context = PmlContext(
        procs[rank], procs, BtlContext(procs[rank], modex, b"b" * 32, engine), registry
    )
    opened = open_framework(pml_framework, registry)
    pml = opened.select_one(context)[1].module
    modex.fence()
    pml.add_procs(procs, [proc.rank for proc in procs])
    comm = Comm(rank, size)
    pml.add_comm(comm)
    return engine, opened, pml, comm


def iterations(size: int) -> int:
    return max(5, min(2000, (64 << 20) // max(size, 1)))


def run_rank(
    rank: int, size: int, directory: str, btl: str, params: dict, *, sizes: list[int]
) -> list:
    engine, opened, pml, comm = setup(rank, size, directory, btl, params)
    wait = engine.wait_until
    peer = (rank + 1) % size
    results = []
    for nbytes in sizes:
        out = np.zeros(nbytes, np.uint8)
        data = np.ones(nbytes, np.uint8)
        send_spec, recv_spec = parse_buffer(data), parse_buffer(out, readonly=False)
        count = iterations(nbytes)
        for phase in ("warm", "timed"):
            n = 3 if phase == "warm" else count
            start = time.perf_counter()
            for _ in range(n):
                if rank == 0 or size == 1:
                    s = pml.isend(send_spec, peer, 1, comm, STANDARD)
                    r = pml.irecv(recv_spec, peer, 1, comm)
                    wait(lambda s=s, r=r: s.complete and r.complete)
                else:
                    r = pml.irecv(recv_spec, peer, 1, comm)
                    wait(lambda r=r: r.complete)
                    s = pml.isend(send_spec, peer, 1, comm, STANDARD)
                    wait(lambda s=s: s.complete)
            elapsed = time.perf_counter() - start
        half = elapsed / count / (1 if size == 1 else 2)
        results.append((nbytes, half * 1e6, nbytes / half / 1e6 if nbytes else 0.0))
    pml.finalize()
    opened.close()
    engine.close()
    if rank == 0 and size > 1:
        print(json.dumps(results), flush=True)
    return results


def report(title: str, results) -> None:
    print(title)
    print(f"{'bytes':>10} {'usec':>10} {'MB/s':>10}")
    for nbytes, usec, bandwidth in results:
        print(f"{nbytes:>10} {usec:>10.2f} {bandwidth:>10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", choices=["self", "sm", "tcp"])
    parser.add_argument("--links", type=int, default=1, help="btl_tcp_links (tcp only)")
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(size) for size in text.split(",")],
        default=SIZES,
        help="comma-separated message sizes in bytes",
    )
    parser.add_argument(
        "--mca",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="an MCA parameter for both ranks (repeatable)",
    )
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    params = {"btl_tcp_links": args.links, **dict(args.mca)}
    if args.transport == "self":
        with tempfile.TemporaryDirectory() as directory:
            results = run_rank(0, 1, directory, "self", params, sizes=args.sizes)
        report("ob1 over btl/self (isend + irecv to oneself)", results)
        return
    btls = "self,sm" if args.transport == "sm" else "self,tcp"
    if args.rank is not None:
        run_rank(args.rank, 2, args.dir, btls, params, sizes=args.sizes)
        return
    with tempfile.TemporaryDirectory() as directory:
        ranks = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    args.transport,
                    "--links",
                    str(args.links),
                    "--sizes",
                    ",".join(map(str, args.sizes)),
                    *[item for pair in args.mca for item in ("--mca", *pair)],
                    "--rank",
                    str(r),
                    "--dir",
                    directory,
                ],
                stdout=subprocess.PIPE,
                text=True,
            )
            for r in range(2)
        ]
        outputs = [process.communicate(timeout=600)[0] for process in ranks]
    if any(process.returncode for process in ranks):
        sys.exit("a benchmark rank failed")
    title = (
        "ob1 over btl/sm, half round trip"
        if args.transport == "sm"
        else f"ob1 over btl/tcp loopback, {args.links} link(s), half round trip"
    )
    report(title, json.loads(outputs[0]))


if __name__ == "__main__":
    main()
