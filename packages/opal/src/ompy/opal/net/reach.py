"""Which of a peer's published addresses this process can reach, found by trying them.

Used by the tcp BTL (before a module pairs with a peer's address) and by ``ompy doctor``.  A
peer on another node publishes every interface it listens on, but not all of them need be
reachable from here: a second network that only some hosts are cabled to, a management network
behind a firewall, a private address that exists on every host.  Before a module pairs with a
remote address, :class:`Reachability` probes it: a TCP connect from the module's own address to
the peer's listening socket, all pending probes at once, each bounded by
``btl_tcp_probe_timeout``.  The probe's socket is bound to the module's interface
(``SO_BINDTODEVICE``), so it proves that *this* NIC reaches the address: without it the kernel
would route a probe from eth1's address out of eth0 whenever eth0 has the route, and a module
would claim a network it is not on.  A connect that completes proves the route there and
back; the probe then closes without a word, which the listener counts as a stranger that went
away (no warning).  The answer is kept per (local address, remote address), so probing costs one
connect per pair of interfaces between two nodes, not one per pair of processes.

An address the peer publishes that is also one of this host's own addresses is never probed
for a peer on another node: it would reach this host (the typical case is a container bridge
with the same address everywhere), so it is unreachable by definition.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import time
from collections.abc import Iterable

import attrs

#: Connect errors that mean "in progress" for a non-blocking socket.
_PENDING = {0, errno.EINPROGRESS, errno.EAGAIN, errno.EALREADY}


def bind_device(sock: socket.socket, interface: str) -> bool:
    """Send ``sock``'s packets only through ``interface``; False where the system refuses.

    Linux lets unprivileged processes do this since 5.7 (root always could); elsewhere, or when
    refused, the socket keeps the kernel's routing, which is what a probe then tests.
    """
    option = getattr(socket, "SO_BINDTODEVICE", None)
    if option is None:  # pragma: no cover - not Linux
        return False
    try:
        sock.setsockopt(socket.SOL_SOCKET, option, interface.encode())
    except OSError:
        return False
    return True


@attrs.frozen
class Verdict:
    """The outcome of one probe: reachable or not, and why not (for messages)."""

    reachable: bool
    reason: str = ""


@attrs.frozen
class Probe:
    """From which local interface and address to which remote listening socket."""

    device: str
    local: str
    remote: str
    port: int


class Reachability:
    """Probe results of one process, per (local address, remote address).

    A local address belongs to one interface of this host, so it stands for the interface too.
    """

    def __init__(
        self,
        timeout: float,
        own_addresses: Iterable[str] = (),
        *,
        timeout_param: str = "btl_tcp_probe_timeout",
    ) -> None:
        self.timeout = timeout
        #: The setting that gave ``timeout``, named when a probe times out.
        self.timeout_param = timeout_param
        self.own = frozenset(own_addresses)
        self._known: dict[tuple[str, str], Verdict] = {}
        #: Probes actually sent (connect attempts), for tests and diagnostics.
        self.probes_sent = 0

    def verdict(self, local: str, remote: str) -> Verdict | None:
        """What is known about ``remote`` from ``local``, or None if it was never probed."""
        return self._known.get((local, remote))

    def probe(self, probes: Iterable[Probe]) -> None:
        """Probe every pair not known yet, concurrently; return when each has a verdict."""
        pending: dict[int, tuple[socket.socket, Probe]] = {}
        started_keys: set[tuple[str, str]] = set()
        for item in probes:
            key = (item.local, item.remote)
            if key in self._known or key in started_keys:
                continue
            started_keys.add(key)
            if item.remote in self.own:
                self._known[key] = Verdict(
                    False,
                    f"{item.remote} is an address of this host too, so it cannot reach "
                    "another node through it",
                )
                continue
            started = self._start(item)
            if isinstance(started, Verdict):
                self._known[key] = started
            else:
                pending[started.fileno()] = (started, item)
        self._wait(pending)

    def _start(self, item: Probe) -> socket.socket | Verdict:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            bind_device(sock, item.device)
            sock.bind((item.local, 0))
            self.probes_sent += 1
            code = sock.connect_ex((item.remote, item.port))
        except OSError as error:
            sock.close()
            return Verdict(False, f"cannot connect from {item.local}: {error.strerror}")
        if code in _PENDING:
            return sock
        sock.close()
        return Verdict(False, f"connect from {item.local} failed: {os.strerror(code)}")

    def _wait(self, pending: dict[int, tuple[socket.socket, Probe]]) -> None:
        if not pending:
            return
        poll = select.poll()
        for fd in pending:
            poll.register(fd, select.POLLOUT)
        deadline = time.monotonic() + self.timeout
        try:
            while pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                for fd, _mask in poll.poll(max(1, int(left * 1000))):
                    sock, item = pending.pop(fd)
                    poll.unregister(fd)
                    code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    sock.close()
                    self._known[(item.local, item.remote)] = (
                        Verdict(True)
                        if code == 0
                        else Verdict(
                            False, f"connect from {item.local} failed: {os.strerror(code)}"
                        )
                    )
        finally:
            for sock, item in pending.values():
                sock.close()
                self._known[(item.local, item.remote)] = Verdict(
                    False,
                    f"no answer to a connect from {item.local} within "
                    f"{self.timeout_param} = {self.timeout:g} s",
                )
