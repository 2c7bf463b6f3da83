"""One rank of a multi-process sm test: ``python sm_worker.py RANK SIZE SCENARIO DIR JOBID PARAMS``.

The ranks meet through a :class:`~ompy.opal.modex.DirectoryModex` in DIR, select the sm BTL as
the run-time will (``select_btls`` with ``btl=sm``), run one scenario and exit 0; any failure
raises, so the exit code and stderr tell the test what went wrong.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import sys
import time
from pathlib import Path

import numpy as np

from ompy.opal.mca.btl import BtlContext, BtlFlags, BtlPeerError, MemHandle
from ompy.opal.mca.btl.base import TAG_USR, select_btls
from ompy.opal.mca.params import Registry
from ompy.opal.modex import DirectoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

TAG = TAG_USR
DEADLINE = 120.0
OFFER = struct.Struct("<16s32sQ")  # memory handle, digest, size
FRAG = struct.Struct("<Q")  # offset of a fragment


class Rank:
    def __init__(self, rank: int, size: int, directory: Path, jobid: str, params: dict) -> None:
        self.rank, self.size, self.directory = rank, size, directory
        environ = {"OMPY_MCA_btl": "sm", "OMPY_MCA_btl_sm_ring_count": str(size)}
        environ.update({f"OMPY_MCA_{k}": str(v) for k, v in params.items()})
        registry = Registry(environ=environ)
        self.engine = ProgressEngine.from_params(registry)
        self.modex = DirectoryModex(directory, rank, size, timeout=DEADLINE)
        self.procs = [Proc(jobid, r, node_id=0, local_rank=r) for r in range(size)]
        context = BtlContext(self.procs[rank], self.modex, bytes(16), self.engine)
        self.selected = select_btls(context, registry)
        (self.module,) = self.selected.modules
        self.received: list[tuple[int, bytes]] = []
        self.errors: list[BaseException] = []
        self.on_fragment = None
        self.module.register(TAG, self.on_frame)
        self.module.register(TAG + 1, lambda m, t, view: self.on_fragment(view))
        self.module.register_error(lambda m, ep, error: self.errors.append(error))
        self.modex.fence()
        self.endpoints = self.module.add_procs(self.procs)

    def on_frame(self, module, tag, view) -> None:
        self.received.append((view[0], bytes(view[1:])))

    def wait(self, predicate, what: str, *, fail_on_errors: bool = True) -> None:
        def done() -> bool:
            if fail_on_errors and self.errors:
                raise RuntimeError(f"rank {self.rank}: waiting for {what}: {self.errors[0]}")
            return predicate()

        if not self.engine.wait_until(done, timeout=DEADLINE):
            raise TimeoutError(f"rank {self.rank}: timed out waiting for {what}")

    def send(self, peer: int, data: bytes | memoryview, tag: int = TAG) -> None:
        """Send the way the PML will: sendi first, else a descriptor (queued when full)."""
        module, endpoint = self.module, self.endpoints[peer]
        view = memoryview(data)
        if module.sendi(endpoint, bytes([self.rank]), view, tag):
            return
        descriptor = module.prepare_src(endpoint, view, 1)
        while descriptor is None:
            self.engine.progress()
            descriptor = module.prepare_src(endpoint, view, 1)
        assert descriptor.data_length == len(view), "frame larger than max_send_size"
        descriptor.segments[0][0] = self.rank
        module.send(endpoint, descriptor, tag)

    def from_peer(self, peer: int) -> list[bytes]:
        return [data for source, data in self.received if source == peer]

    def flag(self, name: str) -> None:
        (self.directory / f"{name}-{self.rank}").touch()

    def await_file(self, name: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while not (self.directory / name).exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"rank {self.rank}: {name} never appeared")
            time.sleep(0.005)

    def barrier(self) -> None:
        """Everyone tells everyone through sm, so nobody finalizes while others still send."""
        for peer in range(self.size):
            if peer != self.rank:
                self.send(peer, b"barrier")
        self.wait(
            lambda: all(
                b"barrier" in self.from_peer(p) for p in range(self.size) if p != self.rank
            ),
            "the barrier",
        )
        self.wait(lambda: not any(e is not None and e.queue for e in self.endpoints), "sends")

    def finish(self) -> None:
        self.selected.close()
        self.engine.close()


def digest(data) -> bytes:
    return hashlib.blake2b(data, digest_size=32).digest()


# -- scenarios --------------------------------------------------------------------------------

LARGE = [0, 1, 4095, 1 << 20, 256 << 20]


def scenario_large(me: Rank) -> None:
    """Rank 1 offers buffers of 0 B to 256 MiB; rank 0 fetches each with get (CMA), or, when
    the module offers no get, rank 1 streams it in max_send_size fragments."""
    use_get = bool(me.module.flags & BtlFlags.GET)
    expected = os.environ["EXPECT_GET"] == "1"
    assert use_get is expected, f"GET offered: {use_get}, expected {expected}"
    room = me.module.max_send_size - 1 - FRAG.size
    for number, size in enumerate(LARGE):
        if me.rank == 1:
            data = np.frombuffer(np.random.default_rng(number).bytes(size), dtype=np.uint8)
            data = data.copy()  # writable, like a user's array
            handle = me.module.register_mem(memoryview(data)) if use_get else MemHandle(0, size)
            me.send(0, OFFER.pack(handle.pack(), digest(data), size))
            if not use_get:
                me.wait(lambda n=number: len(me.from_peer(0)) > 2 * n, "the reader's go-ahead")
                view = memoryview(data)
                for offset in range(0, size, room):
                    me.send(0, FRAG.pack(offset) + bytes(view[offset : offset + room]), TAG + 1)
            acks = number + 1 if use_get else 2 * number + 2
            me.wait(lambda n=acks: len(me.from_peer(0)) >= n, "the reader's acknowledgement")
            if use_get:
                me.module.deregister_mem(handle)
        else:
            me.wait(lambda n=number: len(me.from_peer(1)) > n, "an offer")
            packed, expected_digest, total = OFFER.unpack(me.from_peer(1)[number])
            target = np.empty(total, dtype=np.uint8)
            if use_get:
                me.module.get(me.endpoints[1], memoryview(target), MemHandle.unpack(packed), 0)
            else:
                got = [0]
                view = memoryview(target)

                def on_fragment(frame, got=got, view=view):
                    (offset,) = FRAG.unpack_from(frame, 1)
                    chunk = frame[1 + FRAG.size :]
                    view[offset : offset + len(chunk)] = chunk
                    got[0] += len(chunk)

                me.on_fragment = on_fragment
                me.send(1, b"ready")
                me.wait(lambda got=got, total=total: got[0] == total, "every fragment")
            assert digest(target) == expected_digest, f"{total} bytes arrived corrupted"
            me.send(1, b"ok")
    me.barrier()


def scenario_alltoall(me: Rank) -> None:
    """Every rank sends COUNT numbered frames to every other; each peer's arrive in order."""
    count = int(os.environ.get("COUNT", "200"))
    peers = [p for p in range(me.size) if p != me.rank]
    for seq in range(count):
        for peer in peers:
            me.send(peer, struct.pack("<I", seq) + bytes(seq % 200))
        if not seq % 16:
            me.engine.progress()

    def frames(peer: int) -> list[bytes]:  # a quicker peer's barrier message may be in too
        return [frame for frame in me.from_peer(peer) if frame != b"barrier"]

    me.wait(lambda: sum(len(frames(p)) for p in peers) == count * len(peers), "every frame")
    for peer in peers:
        numbers = [struct.unpack_from("<I", frame)[0] for frame in frames(peer)]
        assert numbers == list(range(count)), f"frames from rank {peer} out of order"
    me.barrier()


def scenario_vanish(me: Rank) -> None:
    """All attach and say so; the test then kills rank 1 (or rank 1 raises); rank 0 must see
    an error naming the peer, and sending to it must raise."""
    me.flag("attached")
    me.await_file("go")
    if me.rank == 1:
        if os.environ.get("HOW") == "exception":
            raise RuntimeError("rank 1 fails on purpose")
        time.sleep(DEADLINE)  # waits for SIGKILL
    if me.rank == 0:
        me.wait(lambda: me.errors, "the peer-vanished error", fail_on_errors=False)
        assert isinstance(me.errors[0], BtlPeerError), me.errors[0]
        assert "rank 1" in str(me.errors[0]) and "without finalizing" in str(me.errors[0])
        try:
            me.send(1, b"to a dead peer")
        except BtlPeerError:
            pass
        else:
            raise AssertionError("sending to a vanished peer must raise")


SCENARIOS = {"large": scenario_large, "alltoall": scenario_alltoall, "vanish": scenario_vanish}


def main() -> None:
    rank, size, scenario, directory, jobid, params = sys.argv[1:7]
    me = Rank(int(rank), int(size), Path(directory), jobid, json.loads(params))
    SCENARIOS[scenario](me)
    me.finish()
    print(f"rank {rank}: {scenario} ok", flush=True)


if __name__ == "__main__":
    main()
