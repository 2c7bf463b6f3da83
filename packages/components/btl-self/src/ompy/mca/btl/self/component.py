"""The ``self`` component and its single module: delivery to oneself inside ``send``.

Open MPI's btl/self hands the sender's descriptor straight to the receive callback; so does this
one when the descriptor is one segment.  A descriptor made by ``prepare_src`` without a copy has
the header and the caller's data in two segments, and the callback needs one contiguous view:
they are joined in a scratch buffer, the single copy of the whole path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ompy.opal.mca import Offer
from ompy.opal.mca.btl import (
    BtlComponent,
    BtlContext,
    BtlFlags,
    BtlModule,
    Descriptor,
    Endpoint,
    MemHandle,
    ModuleAttributes,
    ModuleDefaults,
    RdmaCompletion,
)
from ompy.opal.mca.params import ParamType
from ompy.opal.proc import Proc

from . import __version__


class SelfBtlModule(BtlModule[Endpoint]):
    """Reaches exactly the calling process; every operation completes before it returns."""

    flags = BtlFlags.SEND | BtlFlags.SENDI | BtlFlags.PUT | BtlFlags.GET

    def __init__(
        self,
        component: SelfBtlComponent,
        attributes: ModuleAttributes,
        me: Proc,
        free_list_max: int,
    ) -> None:
        super().__init__(component, "self", attributes)
        self.me = me
        self.setup_free_lists(initial=4, maximum=free_list_max)
        self._scratch = bytearray(0)
        self._depth = 0  # > 0 while a callback runs: nested sends need their own scratch
        self._regions: dict[int, memoryview] = {}
        self._next_key = 1

    # -- peers ------------------------------------------------------------------------------

    def add_procs(self, procs: Sequence[Proc]) -> list[Endpoint | None]:
        me = self.me
        return [Endpoint(self, proc) if proc.same_process(me) else None for proc in procs]

    def del_procs(self, procs: Sequence[Proc], endpoints: Sequence[Endpoint | None]) -> None:
        """Nothing is held per peer."""

    # -- sending ----------------------------------------------------------------------------

    def send(self, endpoint: Endpoint, descriptor: Descriptor, tag: int) -> bool:
        callback = self.callbacks[tag]
        if callback is None:
            self.no_callback(tag)
        segments = descriptor.segments
        view = segments[0] if len(segments) == 1 else self._join(segments)
        self._depth += 1
        try:
            callback(self, tag, view)
        finally:
            self._depth -= 1
        return self.sent_at_once(endpoint, descriptor)

    def sendi(
        self, endpoint: Endpoint, header: bytes | memoryview, payload: memoryview, tag: int
    ) -> bool:
        callback = self.callbacks[tag]
        if callback is None:
            self.no_callback(tag)
        view = self._join((header, payload))
        self._depth += 1
        try:
            callback(self, tag, view)
        finally:
            self._depth -= 1
        return True

    def _join(self, parts: Sequence[bytes | memoryview]) -> memoryview:
        """Copy ``parts`` into one contiguous buffer (the scratch one unless nested)."""
        total = sum(len(part) for part in parts)
        if self._depth:
            buffer = bytearray(total)
        else:
            if len(self._scratch) < total:
                self._scratch = bytearray(total)
            buffer = self._scratch
        view = memoryview(buffer)
        offset = 0
        for part in parts:
            end = offset + len(part)
            view[offset:end] = part
            offset = end
        return view[:total]

    # -- RDMA -------------------------------------------------------------------------------

    def register_mem(self, buffer: memoryview) -> MemHandle:
        view = memoryview(buffer)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        key = self._next_key
        self._next_key += 1
        self._regions[key] = view
        return MemHandle(key, len(view))

    def deregister_mem(self, handle: MemHandle) -> None:
        if self._regions.pop(handle.key, None) is None:
            raise KeyError(f"self: memory handle {handle.key} is not registered")

    def put(
        self,
        endpoint: Endpoint,
        local: memoryview,
        remote: MemHandle,
        offset: int,
        completion: RdmaCompletion | None = None,
    ) -> None:
        region = self._region(remote, offset, len(local))
        region[offset : offset + len(local)] = local
        if completion is not None:
            completion(None)

    def get(
        self,
        endpoint: Endpoint,
        local: memoryview,
        remote: MemHandle,
        offset: int,
        completion: RdmaCompletion | None = None,
    ) -> None:
        region = self._region(remote, offset, len(local))
        local[:] = region[offset : offset + len(local)]
        if completion is not None:
            completion(None)

    def _region(self, handle: MemHandle, offset: int, length: int) -> memoryview:
        region = self._regions.get(handle.key)
        if region is None:
            raise KeyError(f"self: memory handle {handle.key} is not registered (or was freed)")
        if offset < 0 or offset + length > len(region):
            raise IndexError(
                f"self: {length} bytes at offset {offset} fall outside the registered region "
                f"of {len(region)} bytes"
            )
        return region

    def finalize(self) -> None:
        self._regions.clear()
        self._scratch = bytearray(0)


class SelfBtlComponent(BtlComponent):
    """Offers one module that reaches the calling process, with the highest exclusivity."""

    name = "self"
    version = __version__
    description = "loopback to the calling process"
    default_priority = 100
    needs_progress = False
    module_defaults = ModuleDefaults(
        eager_limit=128 * 1024,
        max_send_size=256 * 1024,
        rdma_pipeline_send_length=1 << 31,
        rdma_pipeline_frag_size=1 << 31,
        min_rdma_pipeline_size=0,
        exclusivity=65535,
        latency=0,
        bandwidth=100_000,
    )

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "free_list_max",
            ParamType.INT,
            256,
            "Most descriptors of each size in use at once",
            level=9,
            minimum=1,
        )

    def query(self, context: BtlContext) -> Offer[list[BtlModule[Any]]] | None:
        module = SelfBtlModule(
            self, self.module_attributes(), context.proc, self.param("free_list_max")
        )
        return Offer(self.priority, [module])
