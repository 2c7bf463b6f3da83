"""The ``tcp`` component: finds the interfaces to use and makes one module (or more) per interface.

``query`` discovers the IPv4 interfaces that are up, applies ``btl_tcp_if_include`` or
``btl_tcp_if_exclude`` (default: every one, loopback included), creates ``btl_tcp_links`` modules
per interface, each with its own listening socket, and puts the contact card (every module's
address and port, in module order) into the modex.  Committing and fencing the modex is the
caller's job, after every component has published.  Bridges are skipped by default
(``btl_tcp_if_bridges``, see :mod:`.interfaces`); each module declares its interface's bandwidth
(:mod:`.bandwidth`), by which the BML stripes long messages over the interfaces reaching a peer.

**Reaching peers on other nodes.**  A module pairs with one of the peer's published addresses,
preferring its own subnet; before the first use, the component probes those addresses from the
module's address (:mod:`.reach`), all modules' probes at once, and an address that does not
answer is skipped, so a peer is reached only through the networks that really connect the two
hosts.  ``btl_tcp_probe_timeout = 0`` trusts every published address.

**When it listens at all** (``btl_tcp_listener``).  A listening socket is a door any local
process can knock on, so a job that never needs tcp does not open one.  In ``auto`` mode tcp
offers modules (and so listens) only when some peer may need it: the job spans nodes (or its
size is unknown), or ``btl`` names tcp explicitly (``--mca btl self,tcp``), or no component
queried before it took the peers on this node (sm adds itself to
:attr:`~ompy.opal.mca.btl.BtlContext.node_transports` when it offers; components are queried in
name order), or processes of other jobs may connect (a rank started by ``ompy run``, which can
spawn or accept other jobs: those reach it over tcp only).  A singleton over shared memory
therefore has no tcp listener; a launched one-node job has one (authenticated and hardened as
every tcp listener is), since a spawned job must reach it.  Opening it only when a spawn or
accept happens would close that door too.  ``always`` listens regardless.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import attrs

from ompy.opal.mca import Offer
from ompy.opal.mca.btl import BtlComponent, BtlContext, BtlModule, ModuleDefaults
from ompy.opal.mca.params import ParamType, SourceKind
from ompy.opal.mca.selection import Selection
from ompy.opal.modex import ModexError
from ompy.opal.net.interfaces import (
    Interface,
    discover_interfaces,
    select_interfaces,
    unmatched,
)
from ompy.opal.net.reach import Probe, Reachability
from ompy.opal.net.stack import same_stack, stack_identity
from ompy.opal.proc import Proc
from ompy.opal.tally import Tally

from . import __version__, wire
from .bandwidth import bandwidth_of, parse_rules
from .module import TcpBtlModule
from .poller import Poller
from .rdma import Registrations

#: The data of the longest message sent eagerly by default.  A rendezvous costs a round trip
#: of small frames, about 25 us of Python on each side on loopback, while an eager message
#: costs one more copy at the receiver (about 10 us per 128 KiB): up to 128 KiB the eager
#: message is the faster one (measured: 64 KiB 23 us eager against 49 us as rendezvous + get,
#: 128 KiB 29-39 against 83 us, 256 KiB 51-59 against 84 us; see docs/point-to-point.md).
#: 128 KiB keeps each connection's receive buffer (two eager frames) at about 256 KiB.
EAGER_DATA = 128 * 1024
#: Room for the PML's header on top of the data (ob1's MATCH header is 24 bytes), so that a
#: message of exactly :data:`EAGER_DATA` bytes, a size programs use, still goes eagerly.
HEADER_ROOM = 64


class TcpBtlComponent(BtlComponent):
    """TCP sockets between processes on any nodes; one module per selected interface and link."""

    name = "tcp"
    version = __version__
    description = "TCP sockets, one module per network interface"
    default_priority = 10
    module_defaults = ModuleDefaults(
        eager_limit=EAGER_DATA + HEADER_ROOM,
        max_send_size=EAGER_DATA + HEADER_ROOM,
        rdma_pipeline_send_length=128 * 1024,
        rdma_pipeline_frag_size=1 << 30,
        # A get costs one more control frame than a rendezvous: on loopback it pays for
        # itself from about 100 KiB (measured with pml-ob1's benchmark, --sizes).
        min_rdma_pipeline_size=128 * 1024,
        exclusivity=100,
        latency=100,
        bandwidth=10_000,
    )

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "if_include",
            ParamType.LIST,
            (),
            "Interfaces to use: names (eth0) or IPv4 networks (10.0.0.0/8); empty means all "
            "that are up (loopback included). Mutually exclusive with btl_tcp_if_exclude",
            level=1,
        )
        self.register_param(
            "if_exclude",
            ParamType.LIST,
            (),
            "Interfaces not to use: names or IPv4 networks. Mutually exclusive with "
            "btl_tcp_if_include",
            level=1,
        )
        self.register_param(
            "if_bridges",
            ParamType.BOOL,
            False,
            "Use bridge interfaces (docker0, virbr0, br-*, Open vSwitch) too; by default they "
            "are skipped unless btl_tcp_if_include names them, since a container bridge often "
            "has the same address on every host and reaches only that host",
            level=4,
        )
        self.register_param(
            "if_bandwidth",
            ParamType.LIST,
            (),
            "Bandwidth of interfaces in Mbit/s as NAME:MBITS or NETWORK/PREFIX:MBITS entries "
            "(eth1:2500); it weights how long messages to one peer are striped over the "
            "interfaces. An interface no entry names takes btl_tcp_bandwidth if set, else its "
            "link speed if the driver reports one, else btl_tcp_bandwidth's default",
            level=4,
        )
        self.register_param(
            "probe_timeout",
            ParamType.FLOAT,
            2.0,
            "Seconds a probe (a connect to a peer on another node, made before the first use "
            "of each of its addresses) may take before that address counts as unreachable; 0 "
            "uses every published address without probing",
            level=5,
            minimum=0,
        )
        self.register_param(
            "links",
            ParamType.INT,
            1,
            "Modules (connections) per interface; more than one lets the BML stripe large "
            "messages over several sockets",
            level=4,
            minimum=1,
            maximum=16,
        )
        self.register_param(
            "sndbuf",
            ParamType.INT,
            0,
            "Socket send buffer size in bytes (0: the OS default)",
            level=4,
            minimum=0,
        )
        self.register_param(
            "rcvbuf",
            ParamType.INT,
            0,
            "Socket receive buffer size in bytes (0: the OS default)",
            level=4,
            minimum=0,
        )
        self.register_param(
            "get_stripe_min",
            ParamType.INT,
            1 << 20,
            "Smallest share of a get each tcp module (link) reaching the peer carries; a get "
            "shorter than twice this goes over one link",
            level=5,
            minimum=1,
        )
        self.register_param(
            "free_list_max",
            ParamType.INT,
            1024,
            "Most descriptors of each size a module has in use at once",
            level=9,
            minimum=1,
        )
        self.register_param(
            "listener",
            ParamType.ENUM,
            "auto",
            "When to open the tcp listeners: auto only if some peer may need tcp (the job "
            "spans nodes, btl names tcp, or shared memory does not serve this node's peers); "
            "always in every job",
            level=4,
            choices=("auto", "always"),
        )
        self.register_param(
            "handshake_timeout",
            ParamType.FLOAT,
            10.0,
            "Seconds an accepted connection has to prove the job secret before it is closed",
            level=6,
            minimum=0.01,
        )
        self.register_param(
            "max_unauthenticated",
            ParamType.INT,
            64,
            "Accepted connections that may be in their handshake at once, per listener; a "
            "new one beyond this closes the oldest",
            level=6,
            minimum=1,
        )
        self.register_param(
            "finalize_timeout",
            ParamType.FLOAT,
            5.0,
            "Seconds finalize waits for peers to close their side of each connection",
            level=7,
            minimum=0,
        )

    def open(self) -> None:
        self.poller: Poller | None = None
        self.modules: list[TcpBtlModule] = []
        self._cards: dict[int, list[wire.ContactAddress] | None] = {}
        self._modex = None
        #: What the probes found (None when btl_tcp_probe_timeout is 0: no probing).
        self.reach: Reachability | None = None
        self.me: Proc | None = None
        #: This process's network stack, published with every address (:meth:`shares_stack`).
        self.stack = ""
        #: Regions registered for the peers' gets, shared by every module (link) of this process.
        self.registrations = Registrations()
        #: Whether the modules report (``btl_base_verbose`` >= 20): tested before logging.
        self.verbose = self.log.isEnabledFor(logging.DEBUG)

    def _why_listen(self, context: BtlContext) -> str | None:
        """Why some peer may connect to this process over tcp, or None if none ever will."""
        if self.param("listener") == "always":
            return f"{self.param_name('listener')} = always"
        if context.job_size <= 0:
            return "the job's size is unknown"
        if context.job_size > context.local_size:
            return "the job spans nodes"
        resolved = self.registry.resolve("btl")
        if resolved.value and Selection.parse(resolved.value, param="btl").requested(self.name):
            return f"btl = {resolved.text} names tcp"
        if context.job_size > 1 and not context.node_transports:
            return "no other transport reaches the peers on this node"
        if context.other_jobs:
            return "processes of other jobs may connect (spawn, connect/accept)"
        return None

    def query(self, context: BtlContext) -> Offer[list[BtlModule[Any]]] | None:
        why = self._why_listen(context)
        if why is None:
            self.log.debug(
                "every process of the job is on this node and reached by %s: no tcp listener "
                "(%s = always opens one)",
                ", ".join(sorted(context.node_transports)) or "itself",
                self.param_name("listener"),
            )
            return None
        self.log.debug("listening because %s", why)
        self.stack = stack_identity()
        discovered = discover_interfaces()
        interfaces = select_interfaces(
            discovered,
            self.param("if_include"),
            self.param("if_exclude"),
            bridges=self.param("if_bridges"),
        )
        missing = unmatched(discovered, self.param("if_include"), self.param_name("if_include"))
        if missing:
            self.log.warning(
                "%s entr%s %s match%s no interface of this host (%s); using %s",
                self.param_name("if_include"),
                "y" if len(missing) == 1 else "ies",
                ", ".join(repr(m) for m in missing),
                "es" if len(missing) == 1 else "",
                ", ".join(map(str, discovered)) or "none",
                ", ".join(map(str, interfaces)),
            )
        skipped = [i for i in discovered if i.bridge and i not in interfaces]
        if skipped:
            self.log.debug(
                "skipping bridge interface(s) %s (%s = true, or naming them in %s, uses them)",
                ", ".join(map(str, skipped)),
                self.param_name("if_bridges"),
                self.param_name("if_include"),
            )
        if not interfaces:
            self.log.debug("no usable interface after btl_tcp_if_include/if_exclude")
            return None
        attributes = self.module_attributes()
        rules = parse_rules(self.param("if_bandwidth"), self.param_name("if_bandwidth"))
        user_bandwidth = self.registry.resolve(self.param_name("bandwidth")).source.kind != (
            SourceKind.DEFAULT
        )
        self.me = context.proc
        timeout = self.param("probe_timeout")
        if timeout > 0:
            self.reach = Reachability(timeout, own_addresses=[i.address for i in discovered])
        self._modex = context.modex
        self.poller = poller = Poller(context.progress)
        poller.sweeper = self._sweep
        self.progress = poller.poll  # bound once: this is what the progress engine calls
        refusals = Tally(self.log, "refused incoming connections")
        links = self.param("links")
        counters = {True: 0, False: 0}
        modules = []
        for interface in interfaces:
            for link in range(links):
                kind_index = counters[interface.loopback]
                counters[interface.loopback] += 1
                modules.append(
                    TcpBtlModule(
                        self,
                        attrs.evolve(
                            attributes,
                            bandwidth=bandwidth_of(
                                interface,
                                rules,
                                attributes.bandwidth,
                                user_default=user_bandwidth,
                            ),
                        ),
                        interface=interface,
                        link=link,
                        kind_index=kind_index,
                        me=context.proc,
                        secret=context.secret,
                        poller=poller,
                        cards=self.card,
                        sndbuf=self.param("sndbuf"),
                        rcvbuf=self.param("rcvbuf"),
                        get_stripe_min=self.param("get_stripe_min"),
                        free_list_max=self.param("free_list_max"),
                        finalize_timeout=self.param("finalize_timeout"),
                        handshake_timeout=self.param("handshake_timeout"),
                        max_unauthenticated=self.param("max_unauthenticated"),
                        refusals=refusals,
                    )
                )
        self.modules = modules
        context.modex.put(wire.MODEX_KEY, wire.encode_card([m.contact for m in modules]))
        return Offer(self.priority, list(modules))

    def probe_peers(self, procs: Sequence[Proc]) -> None:
        """Probe, all at once, every address any module may pair with for these procs.

        Only peers on other nodes are probed (this node's addresses reach this node); pairs
        probed before are not probed again.  One probe per address is enough, so the peers
        are taken starting after this rank: the ranks of a job then probe the listeners of
        different peers sharing an address, instead of all knocking on the first one's.
        """
        reach = self.reach
        if reach is None or self.me is None:
            return
        probes = []
        start = self.me.rank % len(procs) if procs else 0
        for proc in [*procs[start:], *procs[:start]]:
            card = self.card(proc.rank)
            if card is None or self.shares_stack(proc, card):
                continue
            for module in self.modules:
                if module.interface.loopback:
                    continue
                local = module.interface.address
                probes.extend(
                    Probe(module.interface.name, local, address.address, address.port)
                    for address in module.candidates(proc)
                    if reach.verdict(local, address.address) is None
                )
        if probes:
            reach.probe(probes)
            if self.verbose:
                pairs = sorted({(p.local, p.remote) for p in probes})
                self.log.debug(
                    "probed %d address pair(s): %s",
                    len(pairs),
                    ", ".join(f"{a}->{b} {reach.verdict(a, b)}" for a, b in pairs),
                )

    def shares_stack(self, proc: Proc, card: Sequence[wire.ContactAddress]) -> bool:
        """Whether ``proc`` needs no probe: it is on this node, or on another "node" that is
        this machine's network stack too (several resource-manager nodes on one host), where
        this host's addresses do reach it."""
        if self.me is not None and proc.same_node(self.me):
            return True
        return bool(card) and same_stack(self.stack, card[0].stack)

    def probe_addresses(
        self, interface: Interface, addresses: Sequence[wire.ContactAddress]
    ) -> None:
        """Probe these addresses from ``interface`` (a module's fallback to routed addresses)."""
        if self.reach is not None:
            self.reach.probe(
                Probe(interface.name, interface.address, a.address, a.port) for a in addresses
            )

    def _sweep(self, now: float) -> int:
        return sum(module.sweep(now) for module in self.modules)

    def card(self, rank: int) -> list[wire.ContactAddress] | None:
        """A peer's contact card from the modex (cached), or None if it published none."""
        if rank not in self._cards:
            try:
                raw = self._modex.get(rank, wire.MODEX_KEY)
            except ModexError:
                self._cards[rank] = None
            else:
                self._cards[rank] = wire.decode_card(raw, rank=rank)
        return self._cards[rank]

    def progress(self) -> int:
        return 0  # replaced by the poller's poll once query made modules

    def close(self) -> None:
        if self.poller is not None:
            self.poller.close()
            self.poller = None
