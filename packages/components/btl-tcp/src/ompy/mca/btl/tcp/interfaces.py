"""Finding this host's IPv4 interfaces and applying ``btl_tcp_if_include`` / ``if_exclude``.

Discovery asks the kernel directly (``socket.if_nameindex`` for the names, ``SIOCGIFFLAGS``,
``SIOCGIFADDR`` and ``SIOCGIFNETMASK`` through ``fcntl.ioctl`` for each), so it needs no extra
package.  Interfaces that are down or have no IPv4 address are skipped.

A selection entry is an interface name (``eth0``) or an IPv4 network in CIDR form
(``10.1.0.0/16``; a bare address means ``/32``) that the interface's address belongs to.
"""

from __future__ import annotations

import fcntl
import ipaddress
import socket
import struct
import sys
from collections.abc import Sequence

import attrs

_SIOCGIFFLAGS = 0x8913
_SIOCGIFADDR = 0x8915
_SIOCGIFNETMASK = 0x891B
_IFF_UP = 0x1
_IFF_LOOPBACK = 0x8


@attrs.frozen
class Interface:
    """An IPv4 interface that is up."""

    name: str
    index: int
    address: str
    prefixlen: int
    loopback: bool

    @property
    def ip(self) -> ipaddress.IPv4Address:
        return ipaddress.IPv4Address(self.address)


def discover_interfaces() -> list[Interface]:
    """Every interface that is up and has an IPv4 address, in kernel index order."""
    if not sys.platform.startswith("linux"):
        # The ioctl numbers above are Linux's; elsewhere offer loopback, which always exists.
        return [Interface("lo", 1, "127.0.0.1", 8, True)]
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for index, name in socket.if_nameindex():
            request = struct.pack("16s16x", name.encode()[:15])
            try:
                flags = struct.unpack_from("H", fcntl.ioctl(probe, _SIOCGIFFLAGS, request), 16)[0]
                if not flags & _IFF_UP:
                    continue
                address = fcntl.ioctl(probe, _SIOCGIFADDR, request)[20:24]
                netmask = fcntl.ioctl(probe, _SIOCGIFNETMASK, request)[20:24]
            except OSError:
                continue  # no IPv4 address, or the interface vanished meanwhile
            prefixlen = bin(int.from_bytes(netmask, "big")).count("1")
            found.append(
                Interface(
                    name, index, socket.inet_ntoa(address), prefixlen, bool(flags & _IFF_LOOPBACK)
                )
            )
    return found


def _parse_entry(entry: str, param: str) -> str | ipaddress.IPv4Network:
    if any(ch in entry for ch in "./") or entry[:1].isdigit():
        try:
            return ipaddress.IPv4Network(entry, strict=False)
        except ValueError as error:
            raise ValueError(
                f"{param} entry '{entry}' is neither an interface name nor an IPv4 network "
                f"in CIDR form such as 10.0.0.0/8 ({error})"
            ) from None
    return entry


def _matches(interface: Interface, entry: str | ipaddress.IPv4Network) -> bool:
    if isinstance(entry, str):
        return interface.name == entry
    return interface.ip in entry


def select_interfaces(
    interfaces: Sequence[Interface],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    *,
    include_param: str = "btl_tcp_if_include",
    exclude_param: str = "btl_tcp_if_exclude",
) -> list[Interface]:
    """The interfaces to use, in discovery order, each at most once.

    Setting both lists is ambiguous and refused; an include entry that matches no interface is
    an error (a typo would otherwise silently drop a network); exclude entries may match nothing.
    """
    if include and exclude:
        raise ValueError(
            f"{include_param} ({','.join(include)}) and {exclude_param} ({','.join(exclude)}) "
            "are both set; set only one of them"
        )
    if include:
        entries = [_parse_entry(entry, include_param) for entry in include]
        for raw, entry in zip(include, entries, strict=True):
            if not any(_matches(interface, entry) for interface in interfaces):
                names = ", ".join(f"{i.name} ({i.address}/{i.prefixlen})" for i in interfaces)
                raise ValueError(
                    f"{include_param} entry '{raw}' matches no interface that is up here "
                    f"(available: {names or 'none'})"
                )
        return [i for i in interfaces if any(_matches(i, entry) for entry in entries)]
    entries = [_parse_entry(entry, exclude_param) for entry in exclude]
    return [i for i in interfaces if not any(_matches(i, entry) for entry in entries)]
