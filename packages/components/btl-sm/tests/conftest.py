"""Fixtures: sm modules for simulated ranks in this process, and leftover checks."""

from __future__ import annotations

import glob
import os
import uuid

import pytest

from ompy.mca.btl.sm import SmBtlComponent
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.btl.base import TAG_USR
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import base as shmem_base
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine


def new_jobid() -> str:
    return f"t{os.getpid()}-{uuid.uuid4().hex[:8]}"


def leftovers(jobid: str) -> list[str]:
    return glob.glob(f"/dev/shm/ompy-{jobid}-*")


class Ranks:
    """``size`` sm modules of one job, all in this process, with an inbox per rank."""

    def __init__(self, size: int, params: dict[str, object]) -> None:
        self.jobid = new_jobid()
        environ = {"OMPY_MCA_btl_sm_ring_count": str(size)}
        environ.update({f"OMPY_MCA_{k}": str(v) for k, v in params.items()})
        self.registry = Registry(environ=environ)
        self.procs = [Proc(self.jobid, r, node_id=0, local_rank=r) for r in range(size)]
        modexes = InMemoryModex.group(size)
        self.engines = [ProgressEngine(spin_count=10) for _ in range(size)]
        self.components, self.modules, self.inboxes = [], [], []
        for rank in range(size):
            component = SmBtlComponent(self.registry)
            component.register_params()
            component.open()
            context = BtlContext(self.procs[rank], modexes[rank], bytes(16), self.engines[rank])
            (module,) = component.query(context).module
            inbox: list[bytes] = []
            module.register(TAG_USR, lambda _m, _t, view, inbox=inbox: inbox.append(bytes(view)))
            self.engines[rank].register(module.progress)
            self.components.append(component)
            self.modules.append(module)
            self.inboxes.append(inbox)
        for modex in modexes:
            modex.fence()
        self.endpoints = [module.add_procs(self.procs) for module in self.modules]

    def close(self) -> None:
        for rank, module in enumerate(self.modules):
            self.engines[rank].unregister(module.progress)
            module.finalize()
            self.components[rank].close()
            self.engines[rank].close()


@pytest.fixture
def make_ranks():
    made: list[Ranks] = []

    def make(size: int = 2, **params: object) -> Ranks:
        ranks = Ranks(size, params)
        made.append(ranks)
        return ranks

    yield make
    for ranks in made:
        ranks.close()
        assert leftovers(ranks.jobid) == [], "segments left in /dev/shm"
    shmem_base.reset_selection()
