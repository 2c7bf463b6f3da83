"""Interface discovery and the btl_tcp_if_include / btl_tcp_if_exclude rules."""

from __future__ import annotations

import pytest

from ompy.mca.btl.tcp.interfaces import Interface, discover_interfaces, select_interfaces

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


def test_an_include_entry_that_matches_nothing_is_an_error_listing_what_exists():
    with pytest.raises(ValueError, match=r"'eth7' matches no interface.*lo \(127\.0\.0\.1/8\)"):
        select_interfaces(ALL, include=["eth7"])


def test_a_malformed_network_is_an_error_naming_the_parameter():
    with pytest.raises(ValueError, match=r"btl_tcp_if_exclude entry '10\.0\.0\.300/8'"):
        select_interfaces(ALL, exclude=["10.0.0.300/8"])
