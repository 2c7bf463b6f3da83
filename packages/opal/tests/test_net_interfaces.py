"""This host's interfaces: discovery, btl_tcp_if_include/if_exclude, bridges skipped."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys

import pytest

from ompy.opal.net.interfaces import Interface, discover_interfaces, select_interfaces, unmatched

LO = Interface("lo", 1, "127.0.0.1", 8, True)
ETH0 = Interface("eth0", 2, "10.1.2.3", 16, False)
IB0 = Interface("ib0", 3, "192.168.7.9", 24, False)
ALL = [LO, ETH0, IB0]


def test_discovery_finds_loopback_with_its_address():
    found = {interface.name: interface for interface in discover_interfaces()}
    assert found["lo"].address == "127.0.0.1"
    assert found["lo"].prefixlen == 8 and found["lo"].loopback


def test_by_default_every_interface_is_used():
    assert select_interfaces(ALL) == ALL


@pytest.mark.parametrize(
    ("include", "expected"),
    [
        (["eth0"], [ETH0]),
        (["ib0", "lo"], [LO, IB0]),  # discovery order, not the order written
        (["10.0.0.0/8"], [ETH0]),
        (["192.168.7.9"], [IB0]),  # a bare address is a /32
        (["lo", "127.0.0.0/8"], [LO]),  # each interface at most once
    ],
)
def test_include_keeps_only_matching_names_and_networks(include, expected):
    assert select_interfaces(ALL, include=include) == expected


@pytest.mark.parametrize(
    ("exclude", "expected"),
    [
        (["lo"], [ETH0, IB0]),
        (["127.0.0.1/8", "192.168.0.0/16"], [ETH0]),
        (["nonexistent"], ALL),
    ],
)
def test_exclude_drops_matching_names_and_networks(exclude, expected):
    assert select_interfaces(ALL, exclude=exclude) == expected


def test_include_and_exclude_together_are_refused_naming_both():
    with pytest.raises(ValueError, match=r"btl_tcp_if_include .* and btl_tcp_if_exclude .* both"):
        select_interfaces(ALL, include=["lo"], exclude=["eth0"])


def test_an_include_list_that_matches_nothing_is_an_error_listing_what_exists():
    with pytest.raises(
        ValueError,
        match=r"btl_tcp_if_include \(eth7,10\.9\.0\.0/16\) matches no interface.*"
        r"lo \(127\.0\.0\.1/8\)",
    ):
        select_interfaces(ALL, include=["eth7", "10.9.0.0/16"])


def test_an_include_entry_for_a_network_only_other_hosts_have_is_allowed_and_reported():
    # One list for every host of a job: this host lacks the second network.
    include = ["eth0", "10.9.0.0/16"]
    assert select_interfaces(ALL, include=include) == [ETH0]
    assert unmatched(ALL, include) == ["10.9.0.0/16"]
    assert unmatched(ALL, ["lo", "ib0"]) == []


def test_a_malformed_network_is_an_error_naming_the_parameter():
    with pytest.raises(ValueError, match=r"btl_tcp_if_exclude entry '10\.0\.0\.300/8'"):
        select_interfaces(ALL, exclude=["10.0.0.300/8"])


# -- bridges ----------------------------------------------------------------------------------

DOCKER0 = Interface("docker0", 4, "172.17.0.1", 16, False, bridge=True)
WITH_BRIDGE = [LO, ETH0, DOCKER0]


def test_bridges_are_skipped_by_default():
    assert select_interfaces(WITH_BRIDGE) == [LO, ETH0]
    assert select_interfaces(WITH_BRIDGE, exclude=["lo"]) == [ETH0]


def test_bridges_are_used_when_asked_for():
    assert select_interfaces(WITH_BRIDGE, bridges=True) == WITH_BRIDGE
    assert select_interfaces(WITH_BRIDGE, include=["docker0"]) == [DOCKER0]
    assert select_interfaces(WITH_BRIDGE, include=["172.16.0.0/12"]) == [DOCKER0]


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True, timeout=30)


@pytest.fixture
def namespace():
    """A fresh network namespace with a bridge and a veth pair (root only)."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to make a network namespace")
    name = f"ompy-test-{secrets.token_hex(3)}"
    _ip("netns", "add", name)
    try:
        _ip("-n", name, "link", "add", "br7", "type", "bridge")
        _ip("-n", name, "addr", "add", "172.31.0.1/16", "dev", "br7")
        _ip("-n", name, "link", "add", "veth7", "type", "veth", "peer", "name", "veth8")
        _ip("-n", name, "addr", "add", "10.99.0.1/24", "dev", "veth7")
        for device in ("lo", "br7", "veth7", "veth8"):
            _ip("-n", name, "link", "set", device, "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True, timeout=30)


@pytest.mark.timeout(60)
def test_discovery_in_a_namespace_tells_bridges_and_link_speeds(namespace):
    script = (
        "import json; from ompy.opal.net.interfaces import discover_interfaces as d; "
        "print(json.dumps({i.name: [i.bridge, i.speed] for i in d()}))"
    )
    done = subprocess.run(
        ["ip", "netns", "exec", namespace, sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    found = json.loads(done.stdout)
    assert found["br7"][0] is True
    assert found["veth7"] == [False, 10_000]  # veth reports 10 Gbit/s
    assert found["lo"] == [False, 0]
    assert "veth8" not in found  # no IPv4 address
