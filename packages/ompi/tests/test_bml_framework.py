"""The bml framework: its description, the endpoint tables and bandwidth weights."""

from __future__ import annotations

import pytest

from ompy.ompi.mca.bml import (
    INTERFACE_VERSION,
    BmlBtl,
    BmlComponent,
    BmlContext,
    BmlEndpoint,
    BmlModule,
    framework,
)
from ompy.ompi.mca.bml.base import assign_weights, select_bml
from ompy.opal.mca import Cardinality, ComponentVersionError, NoComponentError
from ompy.opal.mca.btl import (
    BtlComponent,
    BtlContext,
    BtlFlags,
    BtlModule,
    Endpoint,
    ModuleAttributes,
)
from ompy.opal.mca.discovery import check_component_class
from ompy.opal.mca.params import Registry
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine


class Module(BtlModule[Endpoint]):
    """A transport that reaches everybody and delivers nothing (the tables are under test)."""

    def add_procs(self, procs):
        return [Endpoint(self, proc) for proc in procs]

    def del_procs(self, procs, endpoints):
        pass

    def send(self, endpoint, descriptor, tag):
        return True


def module(name: str, *, latency=10, bandwidth=100, flags=BtlFlags.SEND) -> BtlModule:
    attributes = ModuleAttributes(1024, 4096, 0, 0, 0, 10, latency, bandwidth)
    made = Module(BtlComponent.__new__(BtlComponent), name, attributes)
    made.flags = flags
    return made


PEER = Proc("job", 1)


def btl(name: str, **kw) -> BmlBtl:
    made = module(name, **kw)
    return BmlBtl(made, Endpoint(made, PEER))


def test_the_bml_framework_keeps_one_component():
    assert (framework.name, framework.layer, framework.group) == ("bml", "ompi", "ompy.mca.bml")
    assert framework.cardinality is Cardinality.ONE
    assert framework.interface_version == INTERFACE_VERSION == (1, 0)


def test_a_component_for_another_major_interface_version_is_refused():
    class Old(BmlComponent):
        name = "old"
        version = "1.0"
        interface_version = (2, 0)

    with pytest.raises(ComponentVersionError, match=r"interface version 2\.0"):
        check_component_class(framework, "old", Old)


def test_weights_are_shares_of_the_bandwidth():
    fast, slow = btl("fast", bandwidth=300), btl("slow", bandwidth=100)
    assign_weights([fast, slow])
    assert (fast.weight, slow.weight) == (0.75, 0.25)
    unknown = [btl("a", bandwidth=0), btl("b", bandwidth=0)]
    assign_weights(unknown)
    assert [b.weight for b in unknown] == [0.5, 0.5], "no declared bandwidth: equal shares"


def test_an_endpoint_hands_out_its_eager_modules_round_robin():
    a, b = btl("a"), btl("b")
    endpoint = BmlEndpoint(PEER, [a, b], [a, b])
    assert endpoint.eager_single is None
    assert [endpoint.next_eager() for _ in range(5)] == [a, b, a, b, a]
    single = BmlEndpoint(PEER, [a], [a, b])
    assert single.eager_single is a
    assert endpoint.find(b.module) is b and endpoint.find(module("c")) is None


def test_an_endpoint_knows_its_first_get_capable_rdma_module():
    put_only = btl("put", flags=BtlFlags.SEND | BtlFlags.PUT)
    getter = btl("get", flags=BtlFlags.SEND | BtlFlags.GET)
    endpoint = BmlEndpoint(PEER, [put_only], [put_only], [put_only, getter])
    assert endpoint.rdma_get is getter
    assert [m.name for m in endpoint.modules] == ["put", "get"]


def test_an_endpoint_without_a_send_module_is_refused():
    with pytest.raises(ValueError, match="at least one eager and one send module"):
        BmlEndpoint(PEER, [], [])


def test_the_module_interface_is_abstract():
    with pytest.raises(TypeError, match="abstract"):
        BmlModule()


def test_selection_fails_clearly_when_no_bml_component_is_admitted():
    registry = Registry(environ={"OMPY_MCA_bml": "^r2"}, files=[])
    engine = ProgressEngine()
    try:
        context = BmlContext(
            BtlContext(Proc("job", 0), InMemoryModex(), b"s" * 16, engine), registry
        )
        with pytest.raises(NoComponentError, match="no bml component is able to run"):
            select_bml(context)
    finally:
        engine.close()
