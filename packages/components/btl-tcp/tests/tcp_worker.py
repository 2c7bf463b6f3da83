"""One rank of a two-process tcp BTL test: ``python tcp_worker.py RANK SCENARIO DIR PARAMS_JSON``.

The ranks meet through a :class:`~ompy.opal.modex.DirectoryModex` in DIR, select the tcp BTL
exactly as the run-time will (``select_btls`` with ``btl=tcp``), run one scenario and exit 0; any
failure raises, so the exit code and stderr tell the test what went wrong.
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

from ompy.opal.mca.btl import BtlContext, BtlPeerError, MemHandle
from ompy.opal.mca.btl.base import TAG_USR, select_btls
from ompy.opal.mca.params import Registry
from ompy.opal.modex import DirectoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

TAG = TAG_USR
SEQ = struct.Struct("!Q32s")  # sequence number + blake2b digest of the data
DEADLINE = 60.0


class Rank:
    def __init__(self, rank: int, directory: Path, params: dict) -> None:
        self.rank = rank
        self.directory = directory
        secret = bytes.fromhex(params.pop("secret", "ab" * 16))
        environ = {"OMPY_MCA_btl": "tcp", "OMPY_MCA_btl_tcp_if_include": "lo"}
        environ.update({f"OMPY_MCA_{k}": str(v) for k, v in params.items()})
        self.engine = ProgressEngine(spin_count=200)
        self.modex = DirectoryModex(directory, rank, 2, timeout=DEADLINE)
        self.procs = [Proc("job", r, node_id=0) for r in range(2)]
        self.context = BtlContext(self.procs[rank], self.modex, secret, self.engine)
        self.selected = select_btls(self.context, Registry(environ=environ))
        self.modules = self.selected.modules
        self.received: list[bytes] = []
        self.errors: list[BaseException] = []
        for module in self.modules:
            module.register(TAG, self.on_frame)
            module.register_error(lambda m, ep, error: self.errors.append(error))
        self.modex.fence()
        self.endpoints = [module.add_procs(self.procs)[1 - rank] for module in self.modules]
        self.peer = self.endpoints[0]
        self.module = self.modules[0]

    def on_frame(self, module, tag, view) -> None:
        self.received.append(bytes(view))

    def wait(self, predicate, what: str) -> None:
        if not self.engine.wait_until(predicate, timeout=DEADLINE):
            raise TimeoutError(f"rank {self.rank}: timed out waiting for {what}")

    def send(self, data: bytes | memoryview, endpoint=None, module=None) -> None:
        """Send one frame the way the PML will: sendi first, else a descriptor."""
        module = module or self.module
        endpoint = endpoint or self.peer
        view = memoryview(data)
        if module.sendi(endpoint, b"", view, TAG):
            return
        descriptor = module.prepare_src(endpoint, view, 0)
        while descriptor is None:  # pools exhausted: let queued sends complete
            self.engine.progress()
            descriptor = module.prepare_src(endpoint, view, 0)
        assert descriptor.data_length == len(view), "frame larger than max_send_size"
        module.send(endpoint, descriptor, TAG)

    def drain(self) -> None:
        """Wait until everything queued to the peer has left."""
        self.wait(lambda: not self.peer.queue, "the send queue to drain")

    def barrier(self, name: str, *, progressing: bool = False) -> None:
        """Meet the other rank; without ``progressing`` nothing is accepted meanwhile."""
        (self.directory / f"{name}-{self.rank}").touch()
        other = self.directory / f"{name}-{1 - self.rank}"
        if progressing:
            self.wait(other.exists, f"barrier {name}")
            return
        deadline = time.monotonic() + DEADLINE
        while not other.exists():
            if time.monotonic() > deadline:
                raise TimeoutError(f"rank {self.rank}: barrier {name} timed out")
            time.sleep(0.002)

    def finish(self) -> None:
        self.selected.close()
        self.engine.close()


def pattern(size: int, seed: int) -> np.ndarray:
    return (np.arange(size, dtype=np.uint32) * 2654435761 + seed).astype(np.uint8)


def framed(seq: int, data: memoryview | bytes) -> bytes:
    return SEQ.pack(seq, hashlib.blake2b(data, digest_size=32).digest())


def check_framed(frames: list[bytes], expected_sizes: list[int]) -> None:
    assert len(frames) == len(expected_sizes), (len(frames), len(expected_sizes))
    for seq, (frame, size) in enumerate(zip(frames, expected_sizes, strict=True)):
        got_seq, digest = SEQ.unpack_from(frame)
        data = memoryview(frame)[SEQ.size :]
        assert got_seq == seq, f"frame {seq} arrived as number {got_seq}: out of order"
        assert len(data) == size, f"frame {seq}: {len(data)} bytes, expected {size}"
        assert hashlib.blake2b(data, digest_size=32).digest() == digest, f"frame {seq} corrupt"


# -- scenarios --------------------------------------------------------------------------------

SIZES = [0, 1, 7, 100, 4000, 60_000, 65_536, 200_000, 1 << 20, 64 << 20, 3]


def scenario_sizes(me: Rank) -> None:
    """Rank 0 sends frames of every size class up to 64 MiB; rank 1 checks content and order."""
    if me.rank == 0:
        for seq, size in enumerate(SIZES):
            data = pattern(size, seq)
            frame = framed(seq, data.data) + data.tobytes()
            me.send(frame)
        me.drain()
        me.wait(lambda: me.received == [b"done"], "the acknowledgement")
    else:
        me.wait(lambda: len(me.received) == len(SIZES), "all frames")
        check_framed(me.received, SIZES)
        me.send(b"done")
        me.drain()


def scenario_both_ways(me: Rank) -> None:
    """Both ranks stream many small frames at each other at the same time."""
    count = 20_000
    sizes = [8 + (seq * 37) % 120 for seq in range(count)]
    me.barrier("start")
    for seq, size in enumerate(sizes):
        payload = bytes([seq % 251]) * size
        me.send(framed(seq, payload) + payload)
        if not seq % 64:
            me.engine.progress()
    me.wait(lambda: len(me.received) == count, "the peer's frames")
    me.drain()
    check_framed(me.received, sizes)


def scenario_simultaneous(me: Rank) -> None:
    """Both ranks connect before either looks at its listener: exactly one connection remains."""
    module, peer = me.module, me.peer
    module._connect(peer)
    me.barrier("connecting")
    time.sleep(0.05)  # let both kernels finish both TCP handshakes into the backlogs
    me.send(b"hello from %d" % me.rank)
    me.wait(lambda: len(me.received) == 1, "the peer's hello")
    me.drain()
    assert me.received == [b"hello from %d" % (1 - me.rank)], me.received
    me.barrier("exchanged")
    me.wait(lambda: peer.pending is None, "the losing attempt to be dropped")
    open_connections = [c for c in module.connections if c.state == 5]
    assert len(open_connections) == 1, f"{len(open_connections)} open connections"
    assert peer.conn is open_connections[0]
    assert peer.conn.outgoing == (me.rank == 0), "the lower rank's connection must win"
    assert not me.errors, me.errors


def scenario_wrong_secret(me: Rank) -> None:
    """Rank 1 has another secret: its connection fails on both sides, with clear errors."""
    if me.rank == 1:
        me.send(b"should never arrive")
        me.wait(lambda: me.errors, "the handshake error")
        assert isinstance(me.errors[0], BtlPeerError)
        assert "did not prove knowledge of the job secret" in str(me.errors[0]), me.errors[0]
        try:
            me.send(b"again")
        except BtlPeerError:
            pass
        else:
            raise AssertionError("sending to a peer that failed the handshake must raise")
    me.barrier("tried", progressing=True)
    if me.rank == 0:
        me.engine.wait_until(lambda: False, timeout=0.3)
        assert me.received == [], me.received
        assert me.errors == [], me.errors  # a refused stranger is not the application's error


def scenario_peer_dies(me: Rank) -> None:
    """Rank 1 exits without finalizing; rank 0's error callback hears about it."""
    if me.rank == 1:
        me.send(b"alive")
        me.drain()
        me.barrier("sent")
        os._exit(0)
    me.wait(lambda: me.received == [b"alive"], "the first frame")
    me.barrier("sent")
    me.wait(lambda: me.errors, "the disconnect error")
    assert "without finalizing" in str(me.errors[0]), me.errors[0]
    try:
        me.send(b"to a dead peer")
    except BtlPeerError:
        pass
    else:
        raise AssertionError("sending to a dead peer must raise")


def scenario_finalize_flushes(me: Rank) -> None:
    """Rank 0 queues frames before any connection exists and finalizes at once: none is lost."""
    if me.rank == 0:
        for seq in range(3):
            me.send(b"last words %d" % seq)
        assert me.peer.conn is None, "the frames must be queued while the handshake runs"
        return  # main() finalizes right away
    expected = [b"last words %d" % seq for seq in range(3)]
    if not me.engine.wait_until(lambda: len(me.received) == 3, timeout=15):
        raise TimeoutError(f"rank 1 received only {me.received} of rank 0's last frames")
    assert me.received == expected, me.received


def scenario_get_peer_dies(me: Rank) -> None:
    """Rank 1 dies while answering rank 0's 64 MiB get: the get fails, it does not hang."""
    size = 64 << 20
    if me.rank == 1:
        source = np.ones(size, dtype=np.uint8)
        handle = me.module.register_mem(memoryview(source))
        me.send(handle.pack())
        me.drain()
        # Answer until the reply is partly on the wire, then die with the rest unsent.
        me.wait(lambda: me.peer.queue, "the get request")
        os._exit(0)
    me.wait(lambda: me.received, "the peer's memory handle")
    handle = MemHandle.unpack(me.received[0])
    outcome: list = []
    target = np.zeros(size, dtype=np.uint8)
    me.module.get(me.peer, memoryview(target), handle, 0, outcome.append)
    me.wait(lambda: outcome, "the get to fail")
    assert isinstance(outcome[0], BtlPeerError), outcome
    assert "without finalizing" in str(outcome[0]), outcome[0]
    assert me.errors and "without finalizing" in str(me.errors[0]), me.errors
    assert not me.peer.gets


SCENARIOS = {
    "sizes": scenario_sizes,
    "both_ways": scenario_both_ways,
    "simultaneous": scenario_simultaneous,
    "wrong_secret": scenario_wrong_secret,
    "peer_dies": scenario_peer_dies,
    "finalize_flushes": scenario_finalize_flushes,
    "get_peer_dies": scenario_get_peer_dies,
}


def main() -> None:
    rank, scenario, directory, params = sys.argv[1:5]
    me = Rank(int(rank), Path(directory), json.loads(params))
    SCENARIOS[scenario](me)
    me.finish()
    print(f"rank {rank}: {scenario} ok", flush=True)


if __name__ == "__main__":
    main()
