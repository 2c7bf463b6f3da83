"""Finding this host's IPv4 interfaces and applying ``btl_tcp_if_include`` / ``if_exclude``.

Discovery asks the kernel directly (``socket.if_nameindex`` for the names, ``SIOCGIFFLAGS``,
``SIOCGIFADDR`` and ``SIOCGIFNETMASK`` through ``fcntl.ioctl`` for each), so it needs no extra
package.  Interfaces that are down or have no IPv4 address are skipped.  The ethtool ioctl
(``SIOCETHTOOL``) adds the driver's name, which tells a bridge, and the link speed.  These
ioctls answer for the network namespace of the calling process; ``/sys/class/net`` would not,
when a namespace runs with the host's ``/sys`` mounted.

A selection entry is an interface name (``eth0``) or an IPv4 network in CIDR form
(``10.1.0.0/16``; a bare address means ``/32``) that the interface's address belongs to.

**Bridges** (``docker0``, ``virbr0``, ``br-*``, Open vSwitch ports) are skipped unless
``btl_tcp_if_include`` names them or ``btl_tcp_if_bridges`` is set: a bridge made by a
container runtime usually has the same private address on every host (``172.17.0.1/16``), so
it looks like a shared network between hosts while it reaches only the containers of one host.
"""

from __future__ import annotations

import ctypes
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
_SIOCETHTOOL = 0x8946
_IFF_UP = 0x1
_IFF_LOOPBACK = 0x8
_ETHTOOL_GSET = 0x1  # struct ethtool_cmd, 44 bytes: speed (u16) at 12, speed_hi (u16) at 28
_ETHTOOL_GDRVINFO = 0x3  # struct ethtool_drvinfo, 196 bytes: driver (char[32]) at 4
#: Drivers whose interfaces are bridges (Linux bridge, Open vSwitch internal ports).
BRIDGE_DRIVERS = frozenset({"bridge", "openvswitch"})


@attrs.frozen
class Interface:
    """An IPv4 interface that is up."""

    name: str
    index: int
    address: str
    prefixlen: int
    loopback: bool
    #: The kernel driver says it is a bridge (see the module docstring).
    bridge: bool = False
    #: Link speed in Mbit/s as the driver reports it; 0 when unknown (loopback, most virtual
    #: devices, a link that is down).
    speed: int = 0

    @property
    def ip(self) -> ipaddress.IPv4Address:
        return ipaddress.IPv4Address(self.address)

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"{self.address}/{self.prefixlen}", strict=False)

    def __str__(self) -> str:
        return f"{self.name} ({self.address}/{self.prefixlen})"


def _ethtool(sock: socket.socket, name: str, command: int, size: int) -> bytes | None:
    """The answer of one ethtool ``command`` for interface ``name``, or None if unsupported."""
    data = ctypes.create_string_buffer(struct.pack("I", command), size)
    request = struct.pack("16sP", name.encode()[:15], ctypes.addressof(data))
    request += bytes(40 - len(request))  # struct ifreq is 40 bytes on 64-bit Linux
    try:
        fcntl.ioctl(sock, _SIOCETHTOOL, request)
    except OSError:
        return None
    return data.raw


def _driver(sock: socket.socket, name: str) -> str:
    info = _ethtool(sock, name, _ETHTOOL_GDRVINFO, 196)
    return "" if info is None else info[4:36].split(b"\0", 1)[0].decode(errors="replace")


def _speed(sock: socket.socket, name: str) -> int:
    settings = _ethtool(sock, name, _ETHTOOL_GSET, 44)
    if settings is None:
        return 0
    low, high = struct.unpack_from("H", settings, 12)[0], struct.unpack_from("H", settings, 28)[0]
    speed = low | high << 16
    return 0 if speed in (0, 0xFFFF, 0xFFFFFFFF) else speed


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
            loopback = bool(flags & _IFF_LOOPBACK)
            found.append(
                Interface(
                    name,
                    index,
                    socket.inet_ntoa(address),
                    prefixlen,
                    loopback,
                    bridge=not loopback and _driver(probe, name) in BRIDGE_DRIVERS,
                    speed=0 if loopback else _speed(probe, name),
                )
            )
    return found


def parse_entry(entry: str, param: str) -> str | ipaddress.IPv4Network:
    if any(ch in entry for ch in "./") or entry[:1].isdigit():
        try:
            return ipaddress.IPv4Network(entry, strict=False)
        except ValueError as error:
            raise ValueError(
                f"{param} entry '{entry}' is neither an interface name nor an IPv4 network "
                f"in CIDR form such as 10.0.0.0/8 ({error})"
            ) from None
    return entry


def matches(interface: Interface, entry: str | ipaddress.IPv4Network) -> bool:
    if isinstance(entry, str):
        return interface.name == entry
    return interface.ip in entry


def select_interfaces(
    interfaces: Sequence[Interface],
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    *,
    bridges: bool = False,
    include_param: str = "btl_tcp_if_include",
    exclude_param: str = "btl_tcp_if_exclude",
) -> list[Interface]:
    """The interfaces to use, in discovery order, each at most once.

    Setting both lists is ambiguous and refused; an include list that matches no interface is
    an error.  An include entry that matches nothing while others match is allowed, since the
    hosts of a job need not have the same networks (one list for all of them names every
    host's); :func:`unmatched` finds such entries so that the caller can warn about a possible
    typo.  Exclude entries may match nothing.  Bridges are dropped unless ``bridges`` is true
    or an include entry selects them.
    """
    if include and exclude:
        raise ValueError(
            f"{include_param} ({','.join(include)}) and {exclude_param} ({','.join(exclude)}) "
            "are both set; set only one of them"
        )
    if include:
        entries = [parse_entry(entry, include_param) for entry in include]
        chosen = [i for i in interfaces if any(matches(i, entry) for entry in entries)]
        if not chosen:
            names = ", ".join(f"{i.name} ({i.address}/{i.prefixlen})" for i in interfaces)
            raise ValueError(
                f"{include_param} ({','.join(include)}) matches no interface that is up here "
                f"(available: {names or 'none'})"
            )
        return chosen
    entries = [parse_entry(entry, exclude_param) for entry in exclude]
    return [
        i
        for i in interfaces
        if (bridges or not i.bridge) and not any(matches(i, entry) for entry in entries)
    ]


def unmatched(
    interfaces: Sequence[Interface], entries: Sequence[str], param: str = "btl_tcp_if_include"
) -> list[str]:
    """The entries of ``entries`` (as written) that select none of ``interfaces``."""
    return [
        raw for raw in entries if not any(matches(i, parse_entry(raw, param)) for i in interfaces)
    ]
