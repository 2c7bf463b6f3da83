"""Fixtures: the ranks of one job on one node, as threads of this process over a loopback PML.

Each simulated rank has its own MPI instance, loopback PML and progress engine, and a Proc with
a job id (segment names carry it).  A window is made by calling the sm component's module on
every rank at once, as ``Win.Allocate_shared`` would, and freed afterwards.  Teardown checks
that no segment of the job is left in /dev/shm.  Record locks are open-file-description locks,
so two threads of this process exclude each other exactly as two processes would.
"""

from __future__ import annotations

import glob
import os
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from ompy.mca.osc.sm import SmOscComponent, SmOscModule
from ompy.ompi.api.communicator import Communicator
from ompy.ompi.api.testing import Fabric, LoopbackPml, run_ranks
from ompy.ompi.instance import Instance
from ompy.ompi.mca.osc import FLAVOR_SHARED, OscQuery, WindowSetup
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import base as shmem_base
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine


def leftovers(jobid: str) -> list[str]:
    return glob.glob(f"/dev/shm/ompy-{jobid}-*")


def _abort(code: int, message: str) -> None:
    raise RuntimeError(f"abort({code}): {message}")


class World:
    """``size`` ranks of one job, each with a bare world communicator."""

    def __init__(self, size: int, nodes: list[int] | None = None) -> None:
        self.jobid = f"t{os.getpid()}x{uuid.uuid4().hex[:8]}"
        self.registry = Registry(environ={})
        self.component = SmOscComponent(self.registry)
        self.component.register_params()
        self.component.open()
        fabric = Fabric()
        nodes = nodes or [0] * size
        procs = tuple(Proc(self.jobid, r, node_id=nodes[r]) for r in range(size))
        self.comms: list[Communicator] = []
        for rank in range(size):
            instance = Instance(
                pml=LoopbackPml(fabric, rank),
                engine=ProgressEngine(spin_count=0, block_max_ms=1.0),
                world_rank=rank,
                world_size=size,
                procs=procs,
                abort=_abort,
                registry=self.registry,
            )
            comm = Communicator(instance, 0, tuple(range(size)), "world")
            instance.pml.add_comm(comm)
            self.comms.append(comm)
        self.windows: list[list[SmOscModule]] = []

    @property
    def size(self) -> int:
        return len(self.comms)

    def run(self, body: Callable[[int], Any], timeout: float = 60) -> list[Any]:
        """``body(rank)`` in one thread per rank; the results in rank order."""
        return run_ranks(list(range(self.size)), body, timeout)

    def window(
        self,
        sizes: list[int],
        disp_unit: int = 1,
        flavor: int = FLAVOR_SHARED,
        info: dict[str, str] | None = None,
    ) -> list[SmOscModule]:
        """A window with ``sizes[r]`` bytes on rank ``r``: every rank's module, set up."""

        def body(rank: int) -> SmOscModule:
            query = OscQuery(flavor, self.comms[rank], sizes[rank], disp_unit, info or {})
            offer = self.component.query(query)
            assert offer is not None, "sm declined a single-node window"
            module = offer.module
            assert isinstance(module, SmOscModule)
            module.setup(WindowSetup(query, None))
            return module

        modules = self.run(body)
        self.windows.append(modules)
        return modules

    def free(self, modules: list[SmOscModule]) -> None:
        self.run(lambda rank: modules[rank].free())
        self.windows.remove(modules)

    def close(self) -> None:
        for modules in list(self.windows):
            self.free(modules)
        for comm in self.comms:
            comm.engine.close()
        self.component.close()


@pytest.fixture
def make_world():
    made: list[World] = []

    def make(size: int = 2, nodes: list[int] | None = None) -> World:
        world = World(size, nodes)
        made.append(world)
        return world

    yield make
    for world in made:
        world.close()
        assert leftovers(world.jobid) == [], "segments left in /dev/shm"
    shmem_base.reset_selection()
