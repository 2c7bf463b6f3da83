"""Benchmark (prints numbers, not a test): sm vs multiprocessing.Pipe vs an AF_UNIX socket pair.

8-byte ping-pong latency (half round trip) and 16 MiB bandwidth between two processes:
sm moves 16 MiB with one CMA get (single copy) and, for comparison, as ring fragments.
Run: ``python packages/components/btl-sm/benchmarks/pingpong.py``
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import tempfile
import time
import uuid

import numpy as np

ROUNDS, BIG, BIG_ROUNDS = 20_000, 16 << 20, 20


def sm_rank(rank: int, directory: str, jobid: str, results) -> None:  # noqa: PLR0915
    from ompy.opal.mca.btl import BtlContext, MemHandle
    from ompy.opal.mca.btl.base import TAG_USR, select_btls
    from ompy.opal.mca.params import Registry
    from ompy.opal.modex import DirectoryModex
    from ompy.opal.proc import Proc
    from ompy.opal.progress import ProgressEngine

    registry = Registry(environ={"OMPY_MCA_btl": "sm", "OMPY_MCA_btl_sm_ring_count": "2"})
    engine = ProgressEngine.from_params(registry)
    modex = DirectoryModex(directory, rank, 2)
    procs = [Proc(jobid, r, local_rank=r) for r in range(2)]
    selected = select_btls(BtlContext(procs[rank], modex, bytes(16), engine), registry)
    (module,) = selected.modules
    inbox: list[bytes] = []
    module.register(TAG_USR, lambda m, t, view: inbox.append(bytes(view)))
    modex.fence()
    peer = module.add_procs(procs)[1 - rank]
    progress, sendi, ping = module.progress, module.sendi, memoryview(b"12345678")

    def recv() -> bytes:
        while not inbox:
            progress()
        return inbox.pop(0)

    big = np.full(BIG, rank, dtype=np.uint8)
    handle = module.register_mem(memoryview(big))
    sendi(peer, b"", memoryview(handle.pack()), TAG_USR)
    remote = MemHandle.unpack(recv())

    def pingpong(rounds: int) -> None:
        for _ in range(rounds):
            if rank == 0:
                sendi(peer, b"", ping, TAG_USR)
                recv()
            else:
                recv()
                sendi(peer, b"", ping, TAG_USR)

    pingpong(100)  # warm up
    start = time.perf_counter()
    pingpong(ROUNDS)
    latency = (time.perf_counter() - start) / ROUNDS / 2
    if rank == 0:
        target = memoryview(np.empty(BIG, dtype=np.uint8))
        start = time.perf_counter()
        for _ in range(BIG_ROUNDS):
            module.get(peer, target, remote, 0)
        get_bw = BIG * BIG_ROUNDS / (time.perf_counter() - start)
        assert bytes(target[:4]) == b"\1\1\1\1"
        frag = module.max_send_size
        start = time.perf_counter()
        for _ in range(BIG_ROUNDS):
            view = memoryview(big)
            for offset in range(0, BIG, frag):
                chunk = view[offset : offset + frag]
                while not sendi(peer, b"", chunk, TAG_USR):
                    progress()
            recv()
        frag_bw = BIG * BIG_ROUNDS / (time.perf_counter() - start)
        results.put(("sm", latency, get_bw, frag_bw))
        sendi(peer, b"", memoryview(b"bye"), TAG_USR)
    else:
        scratch = memoryview(bytearray(BIG))
        received = 0
        module.unregister(TAG_USR)

        def on_fragment(m, t, view) -> None:
            nonlocal received
            scratch[received % BIG : received % BIG + len(view)] = view
            received += len(view)
            if view[:3] == b"bye" and len(view) == 3:
                inbox.append(b"bye")

        module.register(TAG_USR, on_fragment)
        for round_ in range(1, BIG_ROUNDS + 1):
            while received < BIG * round_:
                progress()
            sendi(peer, b"", ping, TAG_USR)
        while not inbox:
            progress()
    module.deregister_mem(handle)
    selected.close()
    engine.close()


def pipe_rank(rank: int, conn, results) -> None:
    ping, big = b"12345678", bytearray(BIG)
    start = time.perf_counter()
    for _ in range(ROUNDS):
        if rank == 0:
            conn.send_bytes(ping)
            conn.recv_bytes()
        else:
            conn.recv_bytes()
            conn.send_bytes(ping)
    latency = (time.perf_counter() - start) / ROUNDS / 2
    start = time.perf_counter()
    for _ in range(BIG_ROUNDS):
        if rank == 0:
            conn.recv_bytes_into(big)
        else:
            conn.send_bytes(big)
    if rank == 0:
        results.put(
            (
                "multiprocessing.Pipe",
                latency,
                BIG * BIG_ROUNDS / (time.perf_counter() - start),
                None,
            )
        )


def socket_rank(rank: int, sock, results) -> None:
    ping, big = b"12345678", bytearray(BIG)
    view, small = memoryview(big), bytearray(8)
    start = time.perf_counter()
    for _ in range(ROUNDS):
        if rank == 0:
            sock.sendall(ping)
            sock.recv_into(small, 8)
        else:
            sock.recv_into(small, 8)
            sock.sendall(ping)
    latency = (time.perf_counter() - start) / ROUNDS / 2
    start = time.perf_counter()
    for _ in range(BIG_ROUNDS):
        if rank == 0:
            got = 0
            while got < BIG:
                got += sock.recv_into(view[got:])
        else:
            sock.sendall(big)
    if rank == 0:
        results.put(
            ("AF_UNIX socketpair", latency, BIG * BIG_ROUNDS / (time.perf_counter() - start), None)
        )


def run(target, args0, args1) -> tuple:
    results = mp.Queue()
    procs = [mp.Process(target=target, args=(*args, results)) for args in (args0, args1)]
    for proc in procs:
        proc.start()
    result = results.get(timeout=300)
    for proc in procs:
        proc.join(60)
    return result


def main() -> None:
    mp.set_start_method("fork")
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        jobid = f"bench{os.getpid()}-{uuid.uuid4().hex[:6]}"
        rows.append(run(sm_rank, (0, directory, jobid), (1, directory, jobid)))
    a, b = mp.Pipe()
    rows.append(run(pipe_rank, (0, a), (1, b)))
    s0, s1 = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    rows.append(run(socket_rank, (0, s0), (1, s1)))
    print(f"{'transport':24} {'8 B latency':>12} {'16 MiB bandwidth':>18} {'sm fragments':>14}")
    for name, latency, bandwidth, fragments in rows:
        frag = f"{fragments / 1e9:8.2f} GB/s" if fragments else ""
        label = f"{name} (CMA get)" if name == "sm" else name
        lat, bw = f"{latency * 1e6:9.2f} µs", f"{bandwidth / 1e9:13.2f} GB/s"
        print(f"{label:24} {lat:>12} {bw:>18} {frag:>14}")


if __name__ == "__main__":
    main()
