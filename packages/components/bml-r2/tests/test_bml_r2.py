"""bml/r2: which modules reach which peer, in which arrays, with which weights.

Two simulated ranks in one process with the real self and tcp BTLs (``btl_tcp_links=2`` gives
two tcp modules per rank on loopback).
"""

from __future__ import annotations

import pytest

from ompy.mca.bml.r2 import R2BmlComponent, R2BmlModule
from ompy.ompi.mca.bml import BmlContext, BmlError, BmlUnreachableError
from ompy.ompi.mca.bml.base import select_bml
from ompy.opal.mca import list_candidates
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.params import Registry
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

PROCS = [Proc("job", 0), Proc("job", 1)]


@pytest.fixture
def ranks():
    """``ranks(**params)``: a selected BML per simulated rank, fenced; finalized afterwards."""
    engine = ProgressEngine(spin_count=10)
    made = []

    def make(**params):
        environ = {
            "OMPY_MCA_btl_tcp_if_include": "lo",
            "OMPY_MCA_btl_tcp_finalize_timeout": "0",
        }
        environ.update({f"OMPY_MCA_{k}": str(v) for k, v in params.items()})
        modexes = InMemoryModex.group(2)
        bmls = []
        for rank, modex in enumerate(modexes):
            registry = Registry(environ=environ, files=[])
            context = BmlContext(BtlContext(PROCS[rank], modex, b"k" * 32, engine), registry)
            bmls.append(select_bml(context))
        for modex in modexes:
            modex.fence()
        made.extend(bmls)
        return [selected.module for selected in bmls]

    yield make
    for selected in made:
        selected.close()
    engine.close()


def names(btls):
    return [btl.module.name for btl in btls]


def test_r2_is_the_selected_bml(ranks):
    bml, _ = ranks(btl="self")
    assert isinstance(bml, R2BmlModule)
    assert R2BmlComponent.name == "r2"


def test_oneself_is_reached_only_through_self_and_peers_through_tcp(ranks):
    bml, _ = ranks(btl="self,tcp", btl_tcp_links=2)
    me, peer = bml.add_procs(PROCS)
    assert (names(me.eager), names(me.send), names(me.rdma)) == (["self"], ["self"], ["self"])
    assert me.rdma_get is not None and me.rdma_get.module.name == "self"
    assert names(peer.eager) == names(peer.send) == ["tcp:lo:0", "tcp:lo:1"]
    assert names(peer.rdma) == ["tcp:lo:0", "tcp:lo:1"], "tcp offers get: its modules are rdma too"
    assert peer.rdma_get is peer.rdma[0]
    assert [btl.weight for btl in peer.send] == [0.5, 0.5]
    assert bml.endpoint(PROCS[1]) is peer
    assert bml.add_procs([PROCS[1]]) == [peer], "adding a peer again gives the same endpoint"


def test_the_eager_array_keeps_only_the_lowest_latency_modules(ranks):
    bml, _ = ranks(btl="self,tcp", btl_tcp_links=2)
    slow = bml.btls[-1]
    slow.latency = 500
    _, peer = bml.add_procs(PROCS)
    assert names(peer.eager) == ["tcp:lo:0"]
    assert names(peer.send) == ["tcp:lo:0", "tcp:lo:1"]


def test_weights_follow_the_configured_bandwidth(ranks):
    bml, _ = ranks(btl="self,tcp", btl_tcp_links=2)
    bml.btls[-1].bandwidth = 30_000  # tcp:lo:1; the others keep 10000
    _, peer = bml.add_procs(PROCS)
    assert [(b.module.name, b.weight) for b in peer.send] == [
        ("tcp:lo:1", 0.75),
        ("tcp:lo:0", 0.25),
    ]


def test_an_unreachable_peer_is_an_error_naming_it_and_the_modules(ranks):
    bml, _ = ranks(btl="self")
    with pytest.raises(BmlUnreachableError, match=r"rank 1 of job job .*modules tried: self"):
        bml.add_procs(PROCS)
    with pytest.raises(BmlError, match="never added"):
        bml.endpoint(PROCS[1])


def test_without_any_btl_module_r2_says_so():
    engine = ProgressEngine()
    candidates, _failures = list_candidates("ompy.mca.btl")
    excluded = "^" + ",".join(sorted(c.name for c in candidates))
    registry = Registry(environ={"OMPY_MCA_btl": excluded}, files=[])
    component = R2BmlComponent(registry)
    component.register_params()
    context = BmlContext(BtlContext(PROCS[0], InMemoryModex(), b"k" * 32, engine), registry)
    try:
        with pytest.raises(BmlError, match=f"no BTL module can run .*'\\{excluded}'"):
            component.query(context)
    finally:
        engine.close()


def test_an_unreachable_peer_error_carries_what_the_modules_tried(ranks):
    bml, _ = ranks(btl="self,tcp")
    tcp = bml.btls[-1]
    tcp.unreachable_reason = lambda proc: f"no address of rank {proc.rank} answered (refused)"
    elsewhere = Proc("job", 1, node_id=1, node_name="h2")  # loopback tcp cannot reach it
    with pytest.raises(
        BmlUnreachableError,
        match=r"modules tried: self, tcp:lo:0\); tcp:lo:0: no address of rank 1 answered "
        r"\(refused\); check",
    ):
        bml.add_procs([PROCS[0], elsewhere])
