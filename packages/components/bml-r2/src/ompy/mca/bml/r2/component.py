"""The ``r2`` component and its module: from selected BTL modules to per-peer endpoint tables.

``query`` selects the BTL modules (their components publish contact information in the modex
while being queried); ``add_procs`` asks every module which peers it reaches and keeps, per
peer, only the most exclusive modules, sorted into the eager / send / rdma arrays of a
:class:`~ompy.ompi.mca.bml.BmlEndpoint`.  Modules left out for a peer are told to forget it
(``del_procs``), so a tcp module does not keep an endpoint to a peer that shared memory serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ompy.ompi.mca.bml import (
    BmlBtl,
    BmlComponent,
    BmlContext,
    BmlEndpoint,
    BmlError,
    BmlModule,
    BmlUnreachableError,
)
from ompy.ompi.mca.bml.base import assign_weights
from ompy.opal.mca import Offer
from ompy.opal.mca.btl import BtlFlags, BtlModule, Endpoint, ErrorCallback, RecvCallback
from ompy.opal.mca.btl.base import SelectedBtls, select_btls
from ompy.opal.proc import Proc

from . import __version__

_RDMA = BtlFlags.PUT | BtlFlags.GET


def _key(proc: Proc) -> tuple[str, int]:
    return (proc.jobid, proc.rank)


class R2BmlModule(BmlModule):
    """Endpoint tables over the BTL modules of one process."""

    def __init__(self, selected: SelectedBtls) -> None:
        self.selected = selected
        self.btls: list[BtlModule[Any]] = list(selected.modules)
        self._endpoints: dict[tuple[str, int], BmlEndpoint] = {}
        self._btl_endpoints: dict[tuple[str, int], list[tuple[BtlModule[Any], Endpoint]]] = {}

    # -- peers ------------------------------------------------------------------------------

    def add_procs(self, procs: Sequence[Proc]) -> list[BmlEndpoint]:
        procs = list(procs)
        fresh = [proc for proc in procs if _key(proc) not in self._endpoints]
        if fresh:
            reached = [module.add_procs(fresh) for module in self.btls]
            for index, proc in enumerate(fresh):
                pairs = [
                    (module, endpoint)
                    for module, endpoints in zip(self.btls, reached, strict=True)
                    if (endpoint := endpoints[index]) is not None
                ]
                self._endpoints[_key(proc)] = self._build(proc, pairs)
        return [self._endpoints[_key(proc)] for proc in procs]

    def _build(self, proc: Proc, pairs: list[tuple[BtlModule[Any], Endpoint]]) -> BmlEndpoint:
        senders = [(m, e) for m, e in pairs if m.flags & BtlFlags.SEND]
        if not senders:
            tried = ", ".join(module.name for module in self.btls) or "none"
            reasons = [
                f"{module.name}: {reason}"
                for module in self.btls
                if (reason := module.unreachable_reason(proc))
            ]
            why = f"; {'; '.join(reasons)}" if reasons else ""
            raise BmlUnreachableError(
                f"no BTL module can send to {proc} (modules tried: {tried}){why}; check the "
                "'btl' selection and, for tcp, btl_tcp_if_include/btl_tcp_if_exclude"
            )
        top = max(module.exclusivity for module, _ in senders)
        kept = [(m, e) for m, e in pairs if m.exclusivity == top]
        dropped = [(m, e) for m, e in pairs if m.exclusivity != top]
        for module, endpoint in dropped:
            module.del_procs([proc], [endpoint])
        self._btl_endpoints[_key(proc)] = kept
        send = [BmlBtl(m, e) for m, e in kept if m.flags & BtlFlags.SEND]
        lowest = min(btl.latency for btl in send)
        eager = [btl for btl in send if btl.latency == lowest]
        rdma = [BmlBtl(m, e) for m, e in kept if m.flags & _RDMA]
        send.sort(key=lambda btl: -btl.bandwidth)
        rdma.sort(key=lambda btl: -btl.bandwidth)
        assign_weights(send)
        assign_weights(rdma)
        return BmlEndpoint(proc, eager, send, rdma)

    def del_procs(self, procs: Sequence[Proc]) -> None:
        for proc in procs:
            self._endpoints.pop(_key(proc), None)
            for module, endpoint in self._btl_endpoints.pop(_key(proc), []):
                module.del_procs([proc], [endpoint])

    def endpoint(self, proc: Proc) -> BmlEndpoint:
        try:
            return self._endpoints[_key(proc)]
        except KeyError:
            raise BmlError(f"{proc} was never added to the BML (call add_procs first)") from None

    # -- callbacks --------------------------------------------------------------------------

    def register(self, tag: int, callback: RecvCallback) -> None:
        for module in self.btls:
            module.register(tag, callback)

    def register_error(self, callback: ErrorCallback) -> None:
        for module in self.btls:
            module.register_error(callback)

    def finalize(self) -> None:
        self._endpoints.clear()
        self._btl_endpoints.clear()
        self.selected.close()


class R2BmlComponent(BmlComponent):
    """Builds per-peer endpoint tables from every selected BTL module."""

    name = "r2"
    version = __version__
    description = (
        "per-peer BTL endpoint tables: exclusivity, lowest latency eager, bandwidth weights"
    )
    default_priority = 20

    def query(self, context: BmlContext) -> Offer[BmlModule] | None:
        selected = select_btls(context.btl_context, context.registry)
        if not selected.modules:
            resolved = context.registry.resolve("btl")
            selected.close()
            raise BmlError(
                "no BTL module can run in this process, so no peer (not even this process) is "
                f"reachable; the 'btl' selection is '{resolved.text}' (from {resolved.source})"
            )
        return Offer(self.priority, R2BmlModule(selected))
