"""Fixtures: several ranks of one communicator in this process (threads over a loopback PML).

Each simulated rank has its own MPI instance, loopback PML and progress engine, and a
Proc with a job id (which the sm component needs to name segments); the sm component's module
is enabled on every rank at once, as communicator creation would, and disabled afterwards.
Teardown checks that no segment of the job is left in /dev/shm.
"""

from __future__ import annotations

import glob
import os
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from ompy.mca.coll.sm import SmCollComponent
from ompy.ompi.api.communicator import Communicator
from ompy.ompi.api.testing import Fabric, LoopbackPml, run_ranks
from ompy.ompi.instance import Instance
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import base as shmem_base
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine


def leftovers(jobid: str) -> list[str]:
    return glob.glob(f"/dev/shm/ompy-{jobid}-*")


def _abort(code: int, message: str) -> None:
    raise RuntimeError(f"abort({code}): {message}")


class World:
    """``size`` ranks of one job on one node (or on ``nodes``), each with a bare communicator."""

    def __init__(self, size: int, params: dict[str, Any], nodes: list[int] | None = None) -> None:
        self.jobid = f"t{os.getpid()}x{uuid.uuid4().hex[:8]}"
        environ = {f"OMPY_MCA_{name}": str(value) for name, value in params.items()}
        self.registry = Registry(environ=environ)
        self.component = SmCollComponent(self.registry)
        self.component.register_params()
        self.component.open()
        fabric = Fabric()
        nodes = nodes or [0] * size
        procs = tuple(Proc(self.jobid, r, node_id=nodes[r]) for r in range(size))
        self.comms = []
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
        self.modules: list[Any] = [None] * size

    def query(self, rank: int) -> Any:
        return self.component.query(self.comms[rank])

    def enable(self) -> None:
        """Query and enable the module on every rank at once (a collective)."""

        def body(rank: int) -> None:
            offer = self.query(rank)
            assert offer is not None, "sm declined a single-node communicator"
            offer.module.enable(self.comms[rank])
            self.modules[rank] = offer.module

        self.run(body)

    def run(self, body: Callable[[int], Any], timeout: float = 60) -> list[Any]:
        """``body(rank)`` in one thread per rank; the results in rank order."""
        return run_ranks(list(range(len(self.comms))), body, timeout)

    def close(self) -> None:
        for comm, module in zip(self.comms, self.modules, strict=True):
            if module is not None:
                module.disable(comm)
            comm.engine.close()
        self.component.close()


@pytest.fixture
def make_world():
    made: list[World] = []

    def make(size: int = 2, nodes: list[int] | None = None, **params: Any) -> World:
        world = World(size, params, nodes)
        made.append(world)
        return world

    yield make
    for world in made:
        world.close()
        assert leftovers(world.jobid) == [], "segments left in /dev/shm"
    shmem_base.reset_selection()
