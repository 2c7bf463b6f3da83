"""Locality is the run-time's node identity, not what the file system happens to show.

Hosts simulated by network namespaces (and containers sharing ``/dev/shm``) see each other's
segment files, and a peer's card in the modex names its segment; sm must still reach only peers
the run-time places on this node (``Proc.node_id``), or a job "across hosts" would quietly run
over shared memory.  Here three ranks live in one process, so every segment is visible to all.
"""

from __future__ import annotations

import glob

import pytest

from ompy.mca.btl.sm import SmBtlComponent
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.btl.base import TAG_USR
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import base as shmem_base
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

from .conftest import leftovers, new_jobid

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def three_ranks_two_nodes():
    """Ranks 0 and 1 on node 0, rank 2 on node 1, each with an sm module and 3 rings."""
    jobid = new_jobid()
    registry = Registry(environ={"OMPY_MCA_btl_sm_ring_count": "3"}, files=[])
    procs = [
        Proc(jobid, 0, node_id=0, node_name="h1", local_rank=0),
        Proc(jobid, 1, node_id=0, node_name="h1", local_rank=1),
        Proc(jobid, 2, node_id=1, node_name="h2", local_rank=0),
    ]
    modexes = InMemoryModex.group(3)
    engines, components, modules = [], [], []
    for rank in range(3):
        engine = ProgressEngine(spin_count=10)
        component = SmBtlComponent(registry)
        component.register_params()
        component.open()
        (module,) = component.query(
            BtlContext(procs[rank], modexes[rank], bytes(16), engine)
        ).module
        engine.register(module.progress)
        engines.append(engine)
        components.append(component)
        modules.append(module)
    for modex in modexes:
        modex.fence()
    yield procs, modules, engines
    for engine, module, component in zip(engines, modules, components, strict=True):
        engine.unregister(module.progress)
        module.finalize()
        component.close()
        engine.close()
    assert leftovers(jobid) == [], "segments left in /dev/shm"
    shmem_base.reset_selection()


def test_every_segment_is_visible_but_only_same_node_peers_are_reached(three_ranks_two_nodes):
    procs, modules, _engines = three_ranks_two_nodes
    assert len(glob.glob(f"/dev/shm/ompy-{procs[0].jobid}-*-btl-sm-*")) == 3
    zero, one, two = (module.add_procs(procs) for module in modules)
    assert zero[0] is None and zero[1] is not None and zero[2] is None
    assert one[0] is not None and one[1] is None and one[2] is None
    assert two == [None, None, None]  # alone on node 1, whatever /dev/shm shows


def test_frames_still_flow_between_the_peers_of_one_node(three_ranks_two_nodes):
    procs, modules, engines = three_ranks_two_nodes
    got: list[bytes] = []
    modules[1].register(TAG_USR, lambda _m, _t, view: got.append(bytes(view)))
    endpoints = [module.add_procs(procs) for module in modules]
    to_one = endpoints[0][1]
    assert modules[0].sendi(to_one, b"", memoryview(b"same node"), TAG_USR)
    assert engines[1].wait_until(lambda: got, timeout=10)
    assert got == [b"same node"]
