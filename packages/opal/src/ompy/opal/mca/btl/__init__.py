"""The byte transfer layer (btl) framework: moving tagged fragments between processes.

Published in the ``ompy.frameworks`` entry-point group as ``btl``; components register in
``ompy.mca.btl`` (``self``, ``tcp``, ``sm``).  Many-of-many: every component that can run does,
and the BML above decides which module reaches which peer.  See :mod:`.interface` for the
component and module contract and :mod:`.base` for selection and the tag space.
"""

from __future__ import annotations

from ..framework import Cardinality, Framework
from .errors import BtlError, BtlPeerError, BtlSizeError, BtlTagError, BtlUnsupportedError
from .interface import (
    INTERFACE_VERSION,
    BtlComponent,
    BtlContext,
    BtlFlags,
    BtlModule,
    CompletionCallback,
    Descriptor,
    DescriptorFlags,
    Endpoint,
    ErrorCallback,
    ImmediateSend,
    MemHandle,
    ModuleAttributes,
    ModuleDefaults,
    PeerRing,
    RdmaCompletion,
    RecvCallback,
)

framework = Framework.of(
    BtlComponent,
    "opal",
    Cardinality.MANY,
    "byte transfer layer: moves tagged fragments between processes (self, shared memory, tcp)",
)

__all__ = [
    "INTERFACE_VERSION",
    "BtlComponent",
    "BtlContext",
    "BtlError",
    "BtlFlags",
    "BtlModule",
    "BtlPeerError",
    "BtlSizeError",
    "BtlTagError",
    "BtlUnsupportedError",
    "CompletionCallback",
    "Descriptor",
    "DescriptorFlags",
    "Endpoint",
    "ErrorCallback",
    "ImmediateSend",
    "MemHandle",
    "ModuleAttributes",
    "ModuleDefaults",
    "PeerRing",
    "RdmaCompletion",
    "RecvCallback",
    "framework",
]
