"""Ping-pong latency (8 B), 16 MiB stream and 16 MiB get bandwidth: the tcp BTL against sockets.

    [SPIN=N] [OMPY_MCA_btl_tcp_sndbuf=B ...] python benchmarks/pingpong.py [--iterations N]

``SPIN`` is the progress engine's spin count before it sleeps on the sockets (default 50);
``OMPY_MCA_btl_tcp_*`` variables in the environment reach the tcp component (socket buffer
sizes, links).  The get measurement is rank 0 reading rank 1's registered 16 MiB buffer again
and again (each get waits for the previous one), as the PML's RGET protocol does.

Starts a second process for rank 1, runs each measurement over loopback with both transports
and prints one line per result.  Numbers, not a test.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ompy.opal.mca.btl import BtlContext, MemHandle
from ompy.opal.mca.btl.base import TAG_USR, select_btls
from ompy.opal.mca.params import Registry
from ompy.opal.modex import DirectoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

STREAM = 16 << 20
STREAM_REPEATS = 20


def raw(rank: int, directory: Path, iterations: int) -> None:
    address = directory / "raw-port"
    if rank == 0:
        listener = socket.create_server(("127.0.0.1", 0))
        address.write_text(str(listener.getsockname()[1]))
        sock, _ = listener.accept()
    else:
        while not address.exists() or not address.read_text():
            time.sleep(0.01)
        sock = socket.create_connection(("127.0.0.1", int(address.read_text())))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    small = bytearray(8)
    for phase in ("warm", "timed"):
        start = time.perf_counter()
        for _ in range(iterations):
            if rank == 0:
                sock.sendall(small)
                sock.recv_into(small, 8, socket.MSG_WAITALL)
            else:
                sock.recv_into(small, 8, socket.MSG_WAITALL)
                sock.sendall(small)
        if rank == 0 and phase == "timed":
            half = (time.perf_counter() - start) / iterations / 2
            print(f"plain sockets : 8 B half round trip {half * 1e6:7.2f} us", flush=True)
    data = np.ones(STREAM, dtype=np.uint8)
    target = np.empty(STREAM, dtype=np.uint8)
    view = memoryview(target)
    start = time.perf_counter()
    for _ in range(STREAM_REPEATS):
        if rank == 0:
            sock.sendall(data)
        else:
            got = 0
            while got < STREAM:
                got += sock.recv_into(view[got:])
    if rank == 1:
        sock.sendall(b"k")
    else:
        sock.recv(1)
        seconds = time.perf_counter() - start
        print(f"plain sockets : 16 MiB stream {STREAM * STREAM_REPEATS / seconds / 1e9:7.3f} GB/s")
    sock.close()


def btl(rank: int, directory: Path, iterations: int) -> None:
    engine = ProgressEngine(spin_count=int(os.environ.get("SPIN", "50")))
    modex = DirectoryModex(directory, rank, 2)
    procs = [Proc("bench", r) for r in range(2)]
    context = BtlContext(procs[rank], modex, b"k" * 32, engine)
    environ = {
        **{k: v for k, v in os.environ.items() if k.startswith("OMPY_MCA_btl_tcp_")},
        "OMPY_MCA_btl": "tcp",
        "OMPY_MCA_btl_tcp_if_include": "lo",
        "OMPY_MCA_btl_tcp_max_send_size": str(STREAM + 64),
    }
    selected = select_btls(context, Registry(environ=environ))
    module = selected.modules[0]
    got = [0]

    def on_frame(_module, _tag, view):
        got[0] += 1

    module.register(TAG_USR, on_frame)
    modex.fence()
    endpoint = module.add_procs(procs)[1 - rank]
    small = memoryview(bytearray(8))
    sendi = module.sendi
    wait_until = engine.wait_until

    def send(view):
        if not sendi(endpoint, b"", view, TAG_USR):
            module.send(endpoint, module.prepare_src(endpoint, view, 0), TAG_USR)

    for phase in ("warm", "timed"):
        start = time.perf_counter()
        for i in range(iterations):
            if rank == 0:
                send(small)
                wait_until(lambda i=i: got[0] > i)
            else:
                wait_until(lambda i=i: got[0] > i)
                send(small)
        got[0] = 0
        if rank == 0 and phase == "timed":
            half = (time.perf_counter() - start) / iterations / 2
            print(f"btl tcp       : 8 B half round trip {half * 1e6:7.2f} us", flush=True)
    data = memoryview(np.ones(STREAM, dtype=np.uint8))
    start = time.perf_counter()
    if rank == 0:
        for _ in range(STREAM_REPEATS):
            send(data)
            wait_until(lambda: not endpoint.queue)
        wait_until(lambda: got[0] == 1)
        seconds = time.perf_counter() - start
        print(f"btl tcp       : 16 MiB stream {STREAM * STREAM_REPEATS / seconds / 1e9:7.3f} GB/s")
    else:
        wait_until(lambda: got[0] == STREAM_REPEATS)
        send(small)
        wait_until(lambda: not endpoint.queue)
    get_bandwidth(rank, module, endpoint, engine, got)
    selected.close()
    engine.close()


def get_bandwidth(rank: int, module, endpoint, engine: ProgressEngine, got: list) -> None:
    """Rank 0 gets rank 1's registered 16 MiB buffer STREAM_REPEATS times, one after another."""
    small = memoryview(bytearray(8))

    def send(view):
        if not module.sendi(endpoint, b"", view, TAG_USR):
            module.send(endpoint, module.prepare_src(endpoint, view, 0), TAG_USR)

    if rank == 1:
        source = np.ones(STREAM, dtype=np.uint8)
        handle = module.register_mem(memoryview(source))
        got[0] = 0
        engine.wait_until(lambda: got[0] == 1)  # rank 0 is ready for the handle
        send(memoryview(handle.pack()))
        engine.wait_until(lambda: got[0] == 2)  # rank 0 is done
        module.deregister_mem(handle)
        return
    got[0] = 0
    keys: list[bytes] = []
    module.callbacks[TAG_USR] = lambda _m, _t, view: keys.append(bytes(view))
    send(small)
    engine.wait_until(lambda: keys)
    handle = MemHandle.unpack(keys[0])
    target = memoryview(np.empty(STREAM, dtype=np.uint8))
    done: list = []
    for phase in ("warm", "timed"):
        repeats = 2 if phase == "warm" else STREAM_REPEATS
        start = time.perf_counter()
        for _ in range(repeats):
            module.get(endpoint, target, handle, 0, done.append)
            engine.wait_until(lambda: done)
            if done.pop() is not None:
                raise RuntimeError("a get failed")
        seconds = time.perf_counter() - start
    print(f"btl tcp       : 16 MiB get    {STREAM * STREAM_REPEATS / seconds / 1e9:7.3f} GB/s")
    send(small)
    engine.wait_until(lambda: not endpoint.queue)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    parser.add_argument("--which", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rank is not None:
        {"raw": raw, "btl": btl}[args.which](args.rank, Path(args.dir), args.iterations)
        return
    for which in ("raw", "btl"):
        with tempfile.TemporaryDirectory() as directory:
            peer = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--rank",
                    "1",
                    "--dir",
                    directory,
                    "--which",
                    which,
                    "--iterations",
                    str(args.iterations),
                ]
            )
            try:
                {"raw": raw, "btl": btl}[which](0, Path(directory), args.iterations)
            finally:
                if peer.wait(timeout=120) != 0:
                    sys.exit(f"rank 1 of the {which} run failed")
    print(f"(pid {os.getpid()}, {os.cpu_count()} cpus)")


if __name__ == "__main__":
    main()
