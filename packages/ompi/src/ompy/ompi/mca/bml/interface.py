"""The bml interface: per-peer endpoint tables the PML sends through, and the module contract.

A :class:`BmlBtl` pairs one BTL module with its endpoint to one peer and binds the module's
methods once, so the PML's hot path is ``btl.sendi(btl.endpoint, ...)`` without further lookups.
A :class:`BmlEndpoint` holds every :class:`BmlBtl` that reaches one peer, in the three arrays of
Open MPI's ``mca_bml_base_endpoint_t``:

- ``eager``: the lowest-latency send-capable modules (short messages, control headers),
  used round-robin;
- ``send``: every send-capable module, each with a ``weight`` (its share of the bandwidth) by
  which long messages are striped;
- ``rdma``: the modules that offer put or get, weighted the same way.

How the arrays are filled (exclusivity, latency, bandwidth) is the component's policy; the
module contract (:class:`BmlModule`) is what the PML calls.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, ClassVar

import attrs

from ompy.opal.mca import Component, Offer
from ompy.opal.mca.btl import (
    BtlContext,
    BtlFlags,
    BtlModule,
    Endpoint,
    ErrorCallback,
    RecvCallback,
)
from ompy.opal.mca.params import Registry
from ompy.opal.proc import Proc

INTERFACE_VERSION = (1, 0)


class BmlBtl:
    """One BTL module and its endpoint to one peer, with the module's methods bound once.

    ``weight`` is this module's share (0..1] of the bandwidth of the array it sits in;
    ``bytes_scheduled`` counts the bytes a PML striped over it (diagnostics and tests).  The
    methods are the module's own, bound; ``endpoint`` is what they take as their first argument.
    """

    __slots__ = (
        "alloc",
        "bandwidth",
        "bytes_scheduled",
        "deregister_mem",
        "eager_limit",
        "endpoint",
        "flags",
        "free",
        "get",
        "latency",
        "max_send_size",
        "min_rdma_size",
        "module",
        "prepare_src",
        "put",
        "rdma_frag_size",
        "register_mem",
        "send",
        "sendi",
        "weight",
    )

    module: BtlModule[Any]
    endpoint: Endpoint
    weight: float
    bytes_scheduled: int
    flags: BtlFlags
    eager_limit: int
    max_send_size: int
    #: The module's ``rdma_pipeline_frag_size`` and ``min_rdma_pipeline_size``.
    rdma_frag_size: int
    min_rdma_size: int
    latency: int
    bandwidth: int
    # send, sendi, alloc, free, prepare_src, put, get, register_mem, deregister_mem: the
    # module's methods, bound in __init__ (their types, defaults included, are the module's).

    def __init__(self, module: BtlModule[Any], endpoint: Endpoint, weight: float = 1.0) -> None:
        self.module = module
        self.endpoint = endpoint
        self.weight = weight
        self.flags = module.flags
        self.eager_limit = module.eager_limit
        self.max_send_size = module.max_send_size
        self.rdma_frag_size = module.rdma_pipeline_frag_size
        self.min_rdma_size = module.min_rdma_pipeline_size
        self.latency = module.latency
        self.bandwidth = module.bandwidth
        self.send = module.send
        self.sendi = module.sendi
        self.alloc = module.alloc
        self.free = module.free
        self.prepare_src = module.prepare_src
        self.put = module.put
        self.get = module.get
        self.register_mem = module.register_mem
        self.deregister_mem = module.deregister_mem
        self.bytes_scheduled = 0

    @property
    def can_get(self) -> bool:
        return bool(self.flags & BtlFlags.GET)

    @property
    def can_put(self) -> bool:
        return bool(self.flags & BtlFlags.PUT)

    def __repr__(self) -> str:
        return f"<BmlBtl {self.module.name} -> rank {self.endpoint.proc.rank} w={self.weight:.2f}>"


class BmlEndpoint:
    """Every way to reach one peer, grouped by use (see the module docstring).

    ``eager_single`` is the eager module when there is exactly one, so the PML can skip the
    round-robin call in the common case; ``rdma_get`` is the first RDMA module offering get.
    """

    __slots__ = ("_next_eager", "eager", "eager_single", "proc", "rdma", "rdma_get", "send")

    def __init__(
        self,
        proc: Proc,
        eager: Sequence[BmlBtl],
        send: Sequence[BmlBtl],
        rdma: Sequence[BmlBtl] = (),
    ) -> None:
        if not eager or not send:
            raise ValueError(
                f"an endpoint to {proc} needs at least one eager and one send module "
                f"(got {len(eager)} eager, {len(send)} send)"
            )
        self.proc = proc
        self.eager = list(eager)
        self.send = list(send)
        self.rdma = list(rdma)
        self.eager_single = self.eager[0] if len(self.eager) == 1 else None
        self.rdma_get = next((btl for btl in self.rdma if btl.can_get), None)
        self._next_eager = 0

    def next_eager(self) -> BmlBtl:
        """The eager module to use next (round-robin over the array)."""
        eager = self.eager
        index = self._next_eager
        self._next_eager = index + 1 if index + 1 < len(eager) else 0
        return eager[index]

    def find(self, module: BtlModule[Any]) -> BmlBtl | None:
        """The entry of this endpoint that goes through ``module`` (any array), or None."""
        for array in (self.eager, self.send, self.rdma):
            for btl in array:
                if btl.module is module:
                    return btl
        return None

    @property
    def modules(self) -> list[BtlModule[Any]]:
        """The distinct BTL modules reaching this peer, in first-use order."""
        seen: list[BtlModule[Any]] = []
        for array in (self.eager, self.send, self.rdma):
            for btl in array:
                if btl.module not in seen:
                    seen.append(btl.module)
        return seen

    def __repr__(self) -> str:
        names = ", ".join(module.name for module in self.modules)
        return f"<BmlEndpoint to rank {self.proc.rank}: {names}>"


@attrs.frozen
class BmlContext:
    """What a BML component needs: the BTLs' context and the parameter registry."""

    btl_context: BtlContext
    registry: Registry


class BmlModule(abc.ABC):
    """The process's BTL manager: reachability, per-peer endpoints, callbacks, teardown.

    Every method is required.  Callbacks are the BTL's own types
    (:data:`~ompy.opal.mca.btl.RecvCallback`, :data:`~ompy.opal.mca.btl.ErrorCallback`): the
    BML installs them on its modules as they are.
    """

    #: Every selected BTL module, best component first.
    btls: Sequence[BtlModule[Any]]

    @abc.abstractmethod
    def add_procs(self, procs: Sequence[Proc]) -> list[BmlEndpoint]:
        """The endpoint of each proc (same order); raises if one is unreachable."""

    @abc.abstractmethod
    def del_procs(self, procs: Sequence[Proc]) -> None:
        """Release the endpoints of these procs in every BTL module."""

    @abc.abstractmethod
    def endpoint(self, proc: Proc) -> BmlEndpoint:
        """The endpoint made for ``proc`` by :meth:`add_procs`."""

    @abc.abstractmethod
    def register(self, tag: int, callback: RecvCallback) -> None:
        """Install ``callback`` for ``tag`` on every BTL module."""

    @abc.abstractmethod
    def register_error(self, callback: ErrorCallback) -> None:
        """Have every BTL module report unreachable peers to ``callback``."""

    @abc.abstractmethod
    def finalize(self) -> None:
        """Finalize every BTL module and close the BTL framework."""


class BmlComponent(Component[BmlContext, BmlModule]):
    """Base class of bml components: ``query(BmlContext)`` offers a :class:`BmlModule`."""

    framework: ClassVar[str] = "bml"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: BmlContext) -> Offer[BmlModule] | None:
        """Offer the process's BML module (it selects the BTLs), or ``None`` to stay out."""
        return None
