"""One rank of a multi-process ob1 test: ``python pml_worker.py RANK SIZE SCENARIO DIR PARAMS``.

The ranks meet through a :class:`~ompy.opal.modex.DirectoryModex` in DIR and build their PML
exactly as MPI init will: PmlContext, ``select_one`` on the pml framework (which selects the
BML and the BTLs), modex fence, ``add_procs``, ``add_comm`` of a world communicator.  A scenario
failure raises, so the exit code and stderr tell the test what went wrong.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

from ompy.ompi.constants import ANY_SOURCE, ANY_TAG
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

DEADLINE = 90.0


class Comm:
    def __init__(self, rank: int, size: int) -> None:
        self.context_id, self.rank, self.size = 0, rank, size
        self.world_ranks = self.remote_world_ranks = tuple(range(size))
        self.pml_state = None


class Rank:
    def __init__(self, rank: int, size: int, directory: Path, params: dict) -> None:
        self.rank, self.size = rank, size
        environ = {"OMPY_MCA_btl": "self,tcp", "OMPY_MCA_btl_tcp_if_include": "lo"}
        environ.update({f"OMPY_MCA_{k}": str(v) for k, v in params.items()})
        registry = Registry(environ=environ, files=[])
        self.engine = ProgressEngine(spin_count=100)
        modex = DirectoryModex(directory, rank, size, timeout=DEADLINE)
        procs = [Proc("job", r) for r in range(size)]
        context = PmlContext(
            procs[rank], procs, BtlContext(procs[rank], modex, b"w" * 32, self.engine), registry
        )
        self.framework = open_framework(pml_framework, registry)
        _component, offer = self.framework.select_one(context)
        self.pml = offer.module
        modex.fence()
        self.pml.add_procs(procs, [proc.rank for proc in procs])
        self.comm = Comm(rank, size)
        self.pml.add_comm(self.comm)

    def send(self, data, dest, tag, mode=SendMode.STANDARD):
        return self.pml.isend(parse_buffer(data), dest, tag, self.comm, mode)

    def recv(self, buffer, source, tag):
        return self.pml.irecv(parse_buffer(buffer, readonly=False), source, tag, self.comm)

    def wait(self, *requests) -> None:
        if not self.engine.wait_until(lambda: all(r.complete for r in requests), DEADLINE):
            raise TimeoutError(f"rank {self.rank}: requests pending: {requests}")
        for request in requests:
            if request.exception is not None:
                raise request.exception

    def finish(self) -> None:
        self.pml.finalize()
        self.framework.close()
        self.engine.close()


def pattern(size: int, seed: int) -> np.ndarray:
    return ((np.arange(size, dtype=np.uint64) * 2654435761 + seed) % 251).astype(np.uint8)


def digest(data) -> str:
    return hashlib.blake2b(memoryview(data), digest_size=16).hexdigest()


# -- scenarios --------------------------------------------------------------------------------

#: Around the eager limits: sm's (64 KiB with the 16-byte MATCH header), tcp's (128 KiB of data
#: plus 64 bytes of header room: 128 KiB + 48 is its longest eager message).
SIZES = [
    *(0, 1, 64 * 1024 - 17, 64 * 1024 - 16, 64 * 1024 - 15, 128 * 1024),
    *(128 * 1024 + 48, 128 * 1024 + 49, 1 << 20, 64 << 20, 3),
]


def scenario_sizes(me: Rank) -> None:
    """Rank 0 sends every size class up to 64 MiB; rank 1 receives each and checks it."""
    if me.rank == 0:
        requests = [me.send(pattern(size, seed), 1, seed) for seed, size in enumerate(SIZES)]
        me.wait(*requests)
        done = np.zeros(1, np.uint8)
        me.wait(me.recv(done, 1, 99))
        carried = [btl.bytes_scheduled for btl in me.pml._peers[1].send]
        print(json.dumps({"carried": carried}), flush=True)
    else:
        for seed, size in enumerate(SIZES):
            out = np.empty(size, np.uint8)
            request = me.recv(out, 0, seed)
            me.wait(request)
            assert (request.source, request.tag, request.count) == (0, seed, size)
            assert digest(out) == digest(pattern(size, seed)), f"{size}-byte message corrupted"
        me.wait(me.send(np.ones(1, np.uint8), 0, 99))
        print(json.dumps({"received": len(SIZES)}), flush=True)


def scenario_any_source(me: Rank) -> None:
    """Every other rank sends mixed sizes (some synchronous) to rank 0, which takes them with
    ANY_SOURCE / ANY_TAG; per sender, the order must be the send order."""
    sizes = [5, 200_000, 0, 70_000, 64 * 1024, 3, 1 << 20]
    if me.rank == 0:
        expected = {r: 0 for r in range(1, me.size)}
        for _ in range((me.size - 1) * len(sizes)):
            out = np.empty(max(sizes), np.uint8)
            request = me.recv(out, ANY_SOURCE, ANY_TAG)
            me.wait(request)
            seq = expected[request.source]
            assert request.tag == seq, f"from {request.source}: tag {request.tag}, wanted {seq}"
            size = sizes[seq]
            assert request.count == size
            assert digest(out[:size]) == digest(pattern(size, request.source * 100 + seq))
            expected[request.source] = seq + 1
        # Tag -50: ANY_TAG never matches a negative tag, so the loop above cannot take it
        # whenever it arrives (with tag 50 it raced rank 2's last messages).
        truncated = me.recv(np.empty(10, np.uint8), 1, -50)
        if not me.engine.wait_until(lambda: truncated.complete, DEADLINE):
            raise TimeoutError("truncated receive")
        assert truncated.error == 15 and truncated.count == 10, truncated.exception
        print(json.dumps({"matched": sum(expected.values())}), flush=True)
    else:
        requests = []
        for seq, size in enumerate(sizes):
            mode = SendMode.SYNCHRONOUS if seq % 3 == 1 else SendMode.STANDARD
            requests.append(me.send(pattern(size, me.rank * 100 + seq), 0, seq, mode))
        if me.rank == 1:
            requests.append(me.send(pattern(300_000, 1), 0, -50))
        me.wait(*requests)
        print(json.dumps({"sent": len(requests)}), flush=True)


class InterComm:
    """An intercommunicator of world rank 0 with ranks 1..size-1 (the PML's view of it)."""

    def __init__(self, rank: int, size: int) -> None:
        others = tuple(range(1, size))
        self.context_id = 5
        self.world_ranks, self.remote_world_ranks = ((0,), others) if rank == 0 else (others, (0,))
        self.rank, self.size = self.world_ranks.index(rank), len(self.world_ranks)
        self.pml_state = None


def scenario_inter(me: Rank) -> None:
    """On an intercommunicator, ranks address the remote group: world rank 0 sends to remote
    ranks 0..size-2 (world ranks 1..), eager, rendezvous and synchronous; each answers remote
    rank 0, whose receives report the answering rank of the remote group as the source."""
    inter = InterComm(me.rank, me.size)
    me.pml.add_comm(inter)
    sizes = [7, 300_000]
    if me.rank == 0:
        requests = [
            me.pml.isend(parse_buffer(pattern(n, dest)), dest, 4, inter, mode)
            for dest in range(me.size - 1)
            for n, mode in zip(sizes, (SendMode.STANDARD, SendMode.SYNCHRONOUS), strict=True)
        ]
        answers = {}
        for _ in range(me.size - 1):
            out = np.empty(8, np.int64)
            request = me.pml.irecv(parse_buffer(out, readonly=False), ANY_SOURCE, 6, inter)
            me.wait(request)
            answers[request.source] = int(out[0])
        me.wait(*requests)
        assert answers == {r: r + 1 for r in range(me.size - 1)}, answers
        print(json.dumps({"answers": len(answers)}), flush=True)
    else:
        for n in sizes:
            out = np.empty(n, np.uint8)
            request = me.pml.irecv(parse_buffer(out, readonly=False), 0, 4, inter)
            me.wait(request)
            assert (request.source, request.count) == (0, n)
            assert digest(out) == digest(pattern(n, inter.rank)), "wrong data across"
        answer = np.full(8, me.rank, np.int64)
        me.wait(me.pml.isend(parse_buffer(answer), 0, 6, inter, SendMode.STANDARD))
        print(json.dumps({"received": len(sizes)}), flush=True)
    me.pml.del_comm(inter)


SCENARIOS = {"sizes": scenario_sizes, "any_source": scenario_any_source, "inter": scenario_inter}


def main() -> None:
    rank, size, scenario, directory, params = sys.argv[1:6]
    me = Rank(int(rank), int(size), Path(directory), json.loads(params))
    SCENARIOS[scenario](me)
    me.finish()


if __name__ == "__main__":
    main()
