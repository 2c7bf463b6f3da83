"""How many rings: ``btl_sm_ring_count`` when set, else the run-time's local size from the
context; the launcher's environment variables are identity, read by the ess, never here."""

from __future__ import annotations

import glob
import os
import uuid

import pytest

from ompy.mca.btl.sm import SmBtlComponent
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import base as shmem_base
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine


def new_jobid() -> str:
    return f"t{os.getpid()}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def offer_rings(monkeypatch):
    """``offer_rings(local_size, **params)``: the rings of the module sm offers, or None."""
    monkeypatch.setenv("OMPY_LOCAL_SIZE", "7")  # a launcher's variable: must not count
    made = []

    def offer(local_size: int, **params: object) -> int | None:
        environ = {f"OMPY_MCA_{name}": str(value) for name, value in params.items()}
        component = SmBtlComponent(Registry(environ=environ, files=[]))
        component.register_params()
        component.open()
        engine = ProgressEngine(spin_count=10)
        jobid = new_jobid()
        context = BtlContext(Proc(jobid, 0), InMemoryModex(), bytes(16), engine, local_size)
        made.append((component, engine, jobid))
        offered = component.query(context)
        if offered is None:
            return None
        (module,) = offered.module
        made[-1] = (component, engine, jobid, module)
        return module.layout.ring_count

    yield offer
    for component, engine, jobid, *module in made:
        for each in module:
            each.finalize()
        component.close()
        engine.close()
        assert glob.glob(f"/dev/shm/ompy-{jobid}-*") == []
    shmem_base.reset_selection()


@pytest.mark.parametrize(
    ("local_size", "params", "rings"),
    [
        (1, {}, None),  # alone on its node: sm stays out
        (3, {}, 3),  # the run-time's local size
        (3, {"btl_sm_ring_count": 5}, 5),  # the parameter wins
        (1, {"btl_sm_ring_count": 2}, 2),
    ],
)
def test_rings_come_from_the_parameter_or_the_run_times_local_size(
    offer_rings, local_size, params, rings
):
    assert offer_rings(local_size, **params) == rings
