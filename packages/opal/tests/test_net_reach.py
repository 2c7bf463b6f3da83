"""Probing a peer's addresses before use (``ompy.opal.net.reach``).

The probes run on loopback here (any 127.x address is this host's); probing between real hosts
(network namespaces, where one NIC reaches a peer and another does not) is tested in
``integration/multihost/test_tcp_reach.py``.
"""

from __future__ import annotations

import socket
import time

import pytest

from ompy.opal.net.reach import Probe, Reachability, bind_device

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def listener():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield sock
    sock.close()


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_address_with_a_listener_is_reachable(listener):
    reach = Reachability(5.0)
    reach.probe([Probe("lo", "127.0.0.2", "127.0.0.1", listener.getsockname()[1])])
    verdict = reach.verdict("127.0.0.2", "127.0.0.1")
    assert verdict is not None and verdict.reachable and verdict.reason == ""


def test_a_refused_connect_is_unreachable_and_says_why():
    reach = Reachability(5.0)
    reach.probe([Probe("lo", "127.0.0.1", "127.0.0.1", closed_port())])
    verdict = reach.verdict("127.0.0.1", "127.0.0.1")
    assert verdict is not None and not verdict.reachable
    assert "connect from 127.0.0.1 failed: Connection refused" in verdict.reason


def test_a_probe_nobody_answers_fails_at_the_timeout_naming_the_parameter():
    # A listener whose accept queue is full drops new SYNs: the connect neither completes nor
    # fails, exactly like a firewall that drops packets.
    full = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    full.bind(("127.0.0.1", 0))
    full.listen(0)
    port = full.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    time.sleep(0.1)
    try:
        reach = Reachability(0.3)
        start = time.monotonic()
        reach.probe([Probe("lo", "127.0.0.3", "127.0.0.1", port)])
        took = time.monotonic() - start
    finally:
        for sock in (*fillers, full):
            sock.close()
    verdict = reach.verdict("127.0.0.3", "127.0.0.1")
    assert verdict is not None and not verdict.reachable
    assert "within btl_tcp_probe_timeout = 0.3 s" in verdict.reason
    assert 0.25 <= took < 3


def test_probes_run_concurrently_so_several_timeouts_cost_one(listener):
    full = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    full.bind(("127.0.0.1", 0))
    full.listen(0)
    port = full.getsockname()[1]
    fillers = []
    for _ in range(3):
        filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    time.sleep(0.1)
    try:
        reach = Reachability(0.4)
        start = time.monotonic()
        reach.probe([Probe("lo", f"127.0.1.{i}", "127.0.0.1", port) for i in range(1, 6)])
        took = time.monotonic() - start
    finally:
        for sock in (*fillers, full):
            sock.close()
    assert took < 1.5, f"five probes that time out took {took:.2f} s: they ran one by one"


def test_each_pair_of_addresses_is_probed_once(listener):
    port = listener.getsockname()[1]
    reach = Reachability(5.0)
    reach.probe([Probe("lo", "127.0.0.2", "127.0.0.1", port)] * 3)
    assert reach.probes_sent == 1
    # Another port of the same address (another rank on that node) is not probed again.
    reach.probe([Probe("lo", "127.0.0.2", "127.0.0.1", port + 1)])
    assert reach.probes_sent == 1
    reach.probe([Probe("lo", "127.0.0.4", "127.0.0.1", port)])
    assert reach.probes_sent == 2


def test_an_address_of_this_host_is_not_a_way_to_another_node(listener):
    reach = Reachability(5.0, own_addresses=["172.17.0.1", "127.0.0.1"])
    reach.probe([Probe("lo", "127.0.0.2", "127.0.0.1", listener.getsockname()[1])])
    verdict = reach.verdict("127.0.0.2", "127.0.0.1")
    assert reach.probes_sent == 0
    assert verdict is not None and not verdict.reachable
    assert "is an address of this host too" in verdict.reason


def test_unknown_pairs_have_no_verdict():
    assert Reachability(1.0).verdict("10.0.0.1", "10.0.0.2") is None


def test_binding_to_a_missing_interface_is_refused_not_raised():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        assert bind_device(sock, "no-such-if0") is False
