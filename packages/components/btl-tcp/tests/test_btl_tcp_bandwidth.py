"""Each tcp module's bandwidth: btl_tcp_if_bandwidth rules, btl_tcp_bandwidth, link speed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.mca.btl.tcp.bandwidth import bandwidth_of, parse_rules
from ompy.opal.net.interfaces import Interface

LO = Interface("lo", 1, "127.0.0.1", 8, True)
ETH0 = Interface("eth0", 2, "10.1.2.3", 16, False)
IB0 = Interface("ib0", 3, "192.168.7.9", 24, False)
ALL = [LO, ETH0, IB0]

# -- bandwidth --------------------------------------------------------------------------------

FAST = Interface("eth0", 2, "10.1.2.3", 16, False, speed=25_000)


def test_a_bandwidth_rule_names_an_interface_or_a_network():
    rules = parse_rules(["eth0:2500", "192.168.0.0/16:400"])
    assert bandwidth_of(ETH0, rules, 10_000, user_default=False) == 2500
    assert bandwidth_of(IB0, rules, 10_000, user_default=False) == 400
    assert bandwidth_of(LO, rules, 10_000, user_default=False) == 10_000


def test_without_a_rule_the_link_speed_counts_unless_the_user_set_the_default():
    assert bandwidth_of(FAST, [], 10_000, user_default=False) == 25_000
    assert bandwidth_of(FAST, [], 3000, user_default=True) == 3000
    assert bandwidth_of(ETH0, [], 10_000, user_default=False) == 10_000  # speed unknown


def test_the_first_matching_rule_wins():
    rules = parse_rules(["10.0.0.0/8:100", "eth0:200"])
    assert bandwidth_of(ETH0, rules, 10_000, user_default=True) == 100


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ("eth0", "is not INTERFACE:MBITS"),
        (":100", "is not INTERFACE:MBITS"),
        ("eth0:fast", "must be a positive whole number"),
        ("eth0:0", "must be a positive whole number"),
        ("10.0.0.300/8:10", "neither an interface name nor an IPv4 network"),
    ],
)
def test_a_malformed_bandwidth_rule_is_an_error_naming_the_entry(entry, complaint):
    with pytest.raises(ValueError, match=rf"btl_tcp_if_bandwidth entry '{entry}'.*{complaint}"):
        parse_rules([entry])


@given(
    st.lists(
        st.tuples(st.sampled_from(["lo", "eth0", "ib0", "10.0.0.0/8"]), st.integers(1, 10**6)),
        max_size=4,
    ),
    st.integers(1, 10**6),
    st.booleans(),
)
def test_bandwidth_is_always_a_rule_the_default_or_the_speed(pairs, default, user_default):
    rules = parse_rules([f"{where}:{mbps}" for where, mbps in pairs])
    for interface in (*ALL, FAST):
        value = bandwidth_of(interface, rules, default, user_default=user_default)
        assert value > 0
        assert value in {mbps for _where, mbps in pairs} | {default, interface.speed}
