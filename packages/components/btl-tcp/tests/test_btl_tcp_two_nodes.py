"""Two ranks "on two nodes" in one process: which peer address each module pairs with.

Discovery is replaced so that rank 0 has interfaces ``a0`` (127.0.1.1/24) and ``a1``
(127.0.2.1/24) and rank 1 the same names at .2; the procs say they run on different nodes, so
the modules probe the peer's addresses before pairing with them (all of 127/8 is loopback, so
every probe reaches unless the listener is gone).  Real NICs in network namespaces are tested in
``integration/multihost/test_tcp_reach.py``.
"""

from __future__ import annotations

import socket
from types import SimpleNamespace

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ompy.mca.btl.tcp.component as tcp_component
from ompy.mca.btl.tcp import TcpBtlComponent
from ompy.mca.btl.tcp.module import TcpBtlModule
from ompy.mca.btl.tcp.wire import ContactAddress
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.btl.base import TAG_USR
from ompy.opal.mca.params import Registry
from ompy.opal.modex import InMemoryModex
from ompy.opal.net.interfaces import Interface
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine

pytestmark = pytest.mark.timeout(60)

SECRET = b"n" * 32
PROCS = [Proc("job", 0, node_id=0, node_name="h1"), Proc("job", 1, node_id=1, node_name="h2")]


def interfaces_of(rank: int) -> list[Interface]:
    host = rank + 1
    return [
        Interface("lo", 1, "127.0.0.1", 8, True),
        Interface("a0", 10, f"127.0.1.{host}", 24, False),
        Interface("a1", 11, f"127.0.2.{host}", 24, False),
    ]


def closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TwoNodes:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, **params: object) -> None:
        environ = {"OMPY_MCA_btl_tcp_finalize_timeout": "0", "OMPY_MCA_btl": "self,tcp"}
        environ.update({f"OMPY_MCA_btl_tcp_{k}": str(v) for k, v in params.items()})
        self.engine = ProgressEngine(spin_count=10)
        self.components: list[TcpBtlComponent] = []
        self.modules: list[list] = []
        modexes = InMemoryModex.group(2)
        for rank, modex in enumerate(modexes):
            monkeypatch.setattr(
                tcp_component, "discover_interfaces", lambda r=rank: interfaces_of(r)
            )
            # two nodes in one process: each its own network stack, as on two machines
            monkeypatch.setattr(tcp_component, "stack_identity", lambda r=rank: f"node {r}")
            component = TcpBtlComponent(Registry(environ=environ, files=[]))
            component.register_params()
            component.open()
            context = BtlContext(PROCS[rank], modex, SECRET, self.engine, local_size=1, job_size=2)
            self.modules.append(component.query(context).module)
            self.engine.register(component.progress)
            self.components.append(component)
        for modex in modexes:
            modex.fence()

    def silence(self, rank: int, *names: str) -> None:
        """Make rank 0 see the listeners of ``names`` of ``rank`` as ports nobody listens on."""
        component = self.components[0]
        card = component.card(rank)
        component._cards[rank] = [
            attrs.evolve(a, port=closed_port()) if a.interface in names else a for a in card
        ]

    def by_name(self, rank: int) -> dict:
        return {module.interface.name: module for module in self.modules[rank]}

    def close(self) -> None:
        for component, modules in zip(self.components, self.modules, strict=True):
            for module in modules:
                module.finalize()
            self.engine.unregister(component.progress)
            component.close()
        self.engine.close()


@pytest.fixture
def two_nodes(monkeypatch):
    made = []

    def make(**params):
        nodes = TwoNodes(monkeypatch, **params)
        made.append(nodes)
        return nodes

    yield make
    for nodes in made:
        nodes.close()


def test_each_module_pairs_with_the_peer_address_in_its_own_subnet(two_nodes):
    nodes = two_nodes()
    modules = nodes.by_name(0)
    endpoints = {name: module.add_procs(PROCS)[1] for name, module in modules.items()}
    assert endpoints["lo"] is None  # loopback never reaches another node
    assert endpoints["a0"].address[0] == "127.0.1.2"
    assert endpoints["a1"].address[0] == "127.0.2.2"
    reach = nodes.components[0].reach
    assert reach.verdict("127.0.1.1", "127.0.1.2").reachable
    # All modules' probes ran together on the first add_procs: two pairs, no more.
    assert reach.probes_sent == 2


def test_an_address_that_does_not_answer_is_skipped_for_a_routed_one(two_nodes):
    nodes = two_nodes()
    nodes.silence(1, "a1")  # rank 1's second NIC does not answer
    modules = nodes.by_name(0)
    a0 = modules["a0"].add_procs(PROCS)[1]
    a1 = modules["a1"].add_procs(PROCS)[1]
    assert a0.address[0] == "127.0.1.2"
    assert a1.address[0] == "127.0.1.2"  # its subnet's address refused: the routed one
    verdict = nodes.components[0].reach.verdict("127.0.2.1", "127.0.2.2")
    assert not verdict.reachable and "Connection refused" in verdict.reason


def test_a_peer_no_address_of_which_answers_gets_no_endpoint_and_a_reason(two_nodes):
    nodes = two_nodes()
    nodes.silence(1, "a0", "a1")
    a0 = nodes.by_name(0)["a0"]
    assert a0.add_procs(PROCS) == [None, None]
    reason = a0.unreachable_reason(PROCS[1])
    assert reason.startswith("no address of rank 1 answered from a0 (127.0.1.1/24): ")
    assert "127.0.1.2:" in reason and "127.0.2.2:" in reason and "Connection refused" in reason
    assert a0.unreachable_reason(PROCS[0]) == ""


def test_probing_off_trusts_every_published_address(two_nodes):
    nodes = two_nodes(probe_timeout=0)
    nodes.silence(1, "a1")
    assert nodes.components[0].reach is None
    a1 = nodes.by_name(0)["a1"].add_procs(PROCS)[1]
    assert a1.address[0] == "127.0.2.2"


def test_peers_on_this_node_are_not_probed(two_nodes):
    nodes = two_nodes()
    same_node = Proc("job", 1, node_id=0, node_name="h1")
    endpoint = nodes.by_name(0)["a0"].add_procs([PROCS[0], same_node])[1]
    assert endpoint is not None and nodes.components[0].reach.probes_sent == 0


def test_frames_flow_over_a_probed_pairing(two_nodes):
    nodes = two_nodes()
    got: list[bytes] = []
    for module in nodes.modules[1]:
        module.register(TAG_USR, lambda m, tag, view: got.append(bytes(view)))
        module.add_procs(PROCS)
    a1 = nodes.by_name(0)["a1"]
    endpoint = a1.add_procs(PROCS)[1]
    a1.send(endpoint, a1.prepare_src(endpoint, memoryview(b"over a1"), 0), TAG_USR)
    assert nodes.engine.wait_until(lambda: got, timeout=20)
    assert got == [b"over a1"]


def test_each_module_declares_its_interfaces_bandwidth(two_nodes):
    nodes = two_nodes(if_bandwidth="a0:3000,127.0.2.0/24:1000")
    assert {name: m.bandwidth for name, m in nodes.by_name(0).items()} == {
        "lo": 10_000,
        "a0": 3000,
        "a1": 1000,
    }


def test_a_user_set_tcp_bandwidth_applies_to_interfaces_no_rule_names(two_nodes):
    nodes = two_nodes(bandwidth=500, if_bandwidth="a1:100")
    assert {name: m.bandwidth for name, m in nodes.by_name(0).items()} == {
        "lo": 500,
        "a0": 500,
        "a1": 100,
    }


def test_ranks_probe_the_listeners_of_different_peers_sharing_an_address(two_nodes):
    nodes = two_nodes()
    component = nodes.components[0]
    # Ranks 1..3 of another node share rank 1's card (one host, three listeners on it).
    peers = [Proc("job", r, node_id=1, node_name="h2") for r in (1, 2, 3)]
    card = component.card(1)
    for rank, port_shift in ((2, 1), (3, 2)):
        component._cards[rank] = [attrs.evolve(a, port=a.port + port_shift) for a in card]
    seen = []
    reach = component.reach
    original = reach.probe
    reach.probe = lambda probes: (seen.extend(probes := list(probes)), original(probes))[1]
    component.me = Proc("job", 2, node_id=0, node_name="h1")  # as rank 2 of the job would
    component.probe_peers([PROCS[0], *peers])
    first: dict[tuple[str, str], int] = {}
    for probe in seen:  # the probe of a pair that is sent is its first one
        first.setdefault((probe.local, probe.remote), probe.port)
    assert sorted(first.values()) == sorted(a.port + 1 for a in card if not a.loopback)
    assert reach.probes_sent == 2  # one per pair of addresses, whatever the number of peers


def test_an_include_entry_matching_nothing_here_is_a_warning_not_an_error(two_nodes, caplog):
    with caplog.at_level("WARNING"):
        nodes = two_nodes(if_include="a0,10.9.0.0/16")
    assert [m.interface.name for m in nodes.modules[0]] == ["a0"]
    warned = [r.getMessage() for r in caplog.records if "10.9.0.0/16" in r.getMessage()]
    assert warned and "btl_tcp_if_include entry '10.9.0.0/16' matches no interface" in warned[0]


ADDRESSES = [
    ContactAddress("lo", "127.0.0.1", 8, 1000, True),
    ContactAddress("eth0", "10.1.0.2", 24, 1001, False),
    ContactAddress("eth1", "10.2.0.2", 24, 1002, False),
    ContactAddress("ib0", "192.168.5.2", 16, 1003, False),
]
MINE = [
    Interface("lo", 1, "127.0.0.1", 8, True),
    Interface("eth0", 2, "10.1.0.1", 24, False),
    Interface("eth9", 3, "172.20.0.1", 16, False),
]


@given(
    card=st.lists(st.sampled_from(ADDRESSES), unique=True),
    mine=st.sampled_from(MINE),
    same_node=st.booleans(),
)
def test_candidates_prefer_the_own_subnet_and_keep_loopback_on_the_node(card, mine, same_node):
    me = Proc("job", 0, node_id=0)
    peer = Proc("job", 1, node_id=0 if same_node else 1)
    module = SimpleNamespace(cards=lambda rank: card, interface=mine, me=me)
    found = TcpBtlModule.candidates(module, peer)
    assert set(found) <= set(card)
    if mine.loopback:
        assert found == ([a for a in card if a.loopback] if same_node else [])
        return
    assert not any(a.loopback for a in found)
    same_subnet = [a for a in card if not a.loopback and mine.ip in a.network]
    assert found == (same_subnet or [a for a in card if not a.loopback])
