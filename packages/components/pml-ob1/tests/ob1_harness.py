"""A world of simulated ranks in one process, each with its own ob1 PML, for the tests.

Every rank gets its own parameter registry, modex and PML selected exactly as MPI init selects
it (``open_framework(pml).select_one(PmlContext)``); they share one progress engine, so waiting
on any request moves every rank.  ``btl="self"`` with one rank exercises the protocols without
sockets; ``btl="self,tcp"`` gives several ranks real loopback connections.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ompy.ompi.datatype.buffer import parse_buffer
from ompy.ompi.mca.pml import SendMode
from ompy.ompi.mca.pml import framework as pml_framework
from ompy.ompi.mca.pml.context import PmlContext
from ompy.opal.mca import open_framework
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.params import Registry
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

SECRET = b"t" * 32
TIMEOUT = 20.0


class FakeComm:
    """What the PML needs of a communicator (the API layer's Comm provides the same)."""

    def __init__(self, context_id: int, rank: int, world_ranks) -> None:
        self.context_id = context_id
        self.rank = rank
        self.world_ranks = tuple(world_ranks)
        self.remote_world_ranks = self.world_ranks  # an intracommunicator
        self.size = len(self.world_ranks)
        self.pml_state = None


def pattern(size: int, seed: int = 0) -> np.ndarray:
    """Bytes that differ between messages and positions, so misplaced data is caught."""
    return ((np.arange(size, dtype=np.uint64) * 2654435761 + seed * 97 + 13) % 251).astype(np.uint8)


class World:
    """``size`` simulated ranks with a PML each, on one progress engine."""

    def __init__(self, size: int, btl: str = "self", **params: object) -> None:
        environ = {
            "OMPY_MCA_btl": btl,
            "OMPY_MCA_btl_tcp_if_include": "lo",
            # the ranks finalize one after the other in one thread: do not wait for peers' BYE
            "OMPY_MCA_btl_tcp_finalize_timeout": "0",
        }
        environ.update({f"OMPY_MCA_{name}": str(value) for name, value in params.items()})
        self.engine = ProgressEngine(spin_count=10, block_max_ms=1)
        self.procs = [Proc("job", rank) for rank in range(size)]
        modexes = InMemoryModex.group(size)
        self.frameworks, self.pmls = [], []
        for rank, proc in enumerate(self.procs):
            registry = Registry(environ=environ, files=[])
            context = PmlContext(
                proc, self.procs, BtlContext(proc, modexes[rank], SECRET, self.engine), registry
            )
            opened = open_framework(pml_framework, registry)
            _component, offer = opened.select_one(context)
            self.frameworks.append(opened)
            self.pmls.append(offer.module)
        for modex in modexes:
            modex.fence()
        for pml in self.pmls:
            pml.add_procs(self.procs, [proc.rank for proc in self.procs])
        self.world = self.comm(0)
        self.finalized = False

    def comm(self, context_id: int, ranks=None) -> list[FakeComm]:
        """A communicator over ``ranks`` (default: all), added on each member; one per rank."""
        ranks = list(range(len(self.pmls))) if ranks is None else list(ranks)
        comms = [FakeComm(context_id, index, ranks) for index in range(len(ranks))]
        for comm, world_rank in zip(comms, ranks, strict=True):
            self.pmls[world_rank].add_comm(comm)
        return comms

    # -- operations, by world rank ------------------------------------------------------------

    def isend(self, rank, data, dest, tag, *, comm=None, mode=SendMode.STANDARD):
        comm = (comm or self.world)[rank]
        return self.pmls[rank].isend(parse_buffer(data), dest, tag, comm, mode)

    def irecv(self, rank, buffer, source, tag, *, comm=None):
        comm = (comm or self.world)[rank]
        return self.pmls[rank].irecv(parse_buffer(buffer, readonly=False), source, tag, comm)

    def wait(self, *requests, timeout: float = TIMEOUT) -> None:
        if not self.engine.wait_until(lambda: all(r.complete for r in requests), timeout):
            pending = [r for r in requests if not r.complete]
            raise TimeoutError(f"requests still pending after {timeout} s: {pending}")

    def settle(self, seconds: float = 0.05) -> None:
        """Progress for a while (to show that something does *not* happen)."""
        self.engine.wait_until(lambda: False, timeout=seconds)

    def btl_modules(self, rank: int):
        return list(self.pmls[rank].bml.btls)

    def finalize(self) -> None:
        if self.finalized:
            return
        self.finalized = True
        errors = []
        for pml, opened in zip(self.pmls, self.frameworks, strict=True):
            try:
                pml.finalize()
            except Exception as error:
                errors.append(error)
            opened.close()
        self.engine.close()
        if errors:
            raise errors[0]


class Spy:
    """Counts the fragments each header type brings to one rank (wraps the BTL callbacks)."""

    def __init__(self, world: World, rank: int) -> None:
        self.counts: Counter[str] = Counter()
        names = {0x41: "MATCH", 0x42: "RNDV", 0x43: "RGET", 0x44: "ACK", 0x46: "FRAG", 0x49: "FIN"}
        for module in world.btl_modules(rank):
            for tag, name in names.items():
                original = module.callbacks[tag]
                module.callbacks[tag] = self._wrap(name, original)

    def _wrap(self, name, original):
        def counted(module, tag, view):
            self.counts[name] += 1
            original(module, tag, view)

        return counted
