"""The bandwidth of each tcp module: the weight by which the BML stripes long messages.

A peer reached through two interfaces gets each long message cut in shares proportional to the
modules' bandwidths (``ompy.ompi.mca.bml.base.assign_weights``; a get is cut the same way).  What
each interface is worth, first match wins:

1. an entry of ``btl_tcp_if_bandwidth`` that selects it (``eth1:2500``, ``10.2.0.0/16:2500``);
2. ``btl_tcp_bandwidth`` when the user set it (it then applies to every interface);
3. the link speed the driver reports (Mbit/s), when it reports one;
4. ``btl_tcp_bandwidth``'s default.

Rate limits set with ``tc`` are not visible to the driver: name them with (1).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import attrs

from ompy.opal.net.interfaces import Interface, matches, parse_entry


@attrs.frozen
class BandwidthRule:
    """One ``btl_tcp_if_bandwidth`` entry: which interfaces, and their bandwidth in Mbit/s."""

    selector: str | ipaddress.IPv4Network
    mbps: int


def parse_rules(entries: Sequence[str], param: str = "btl_tcp_if_bandwidth") -> list[BandwidthRule]:
    """Parse ``NAME:MBPS`` / ``CIDR:MBPS`` entries, with an error naming the bad one."""
    rules = []
    for entry in entries:
        where, sep, value = entry.rpartition(":")
        if not sep or not where:
            raise ValueError(
                f"{param} entry '{entry}' is not INTERFACE:MBITS or NETWORK:MBITS "
                "(for example eth1:2500 or 10.2.0.0/16:2500)"
            )
        try:
            mbps = int(value)
        except ValueError:
            mbps = 0
        if mbps <= 0:
            raise ValueError(
                f"{param} entry '{entry}': the bandwidth '{value}' must be a positive whole "
                "number of Mbit/s"
            )
        try:
            selector = parse_entry(where, param)
        except ValueError as error:
            raise ValueError(f"{param} entry '{entry}': {error}") from None
        rules.append(BandwidthRule(selector, mbps))
    return rules


def bandwidth_of(
    interface: Interface, rules: Sequence[BandwidthRule], default: int, *, user_default: bool
) -> int:
    """The bandwidth (Mbit/s) a module on ``interface`` declares; see the module docstring.

    ``default`` is ``btl_tcp_bandwidth``; ``user_default`` says whether the user set it.
    """
    for rule in rules:
        if matches(interface, rule.selector):
            return rule.mbps
    if user_default or not interface.speed:
        return default
    return interface.speed
