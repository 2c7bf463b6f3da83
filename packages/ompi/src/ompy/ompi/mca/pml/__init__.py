"""The pml framework: point-to-point messaging (matching and protocols) under the MPI API.

One pml component runs per process (``ompy-pml-ob1`` is the baseline); it is found through the
entry-point group ``ompy.mca.pml`` and selected with the ``pml`` parameter like any framework.
"""

from __future__ import annotations

from ompy.opal.mca import Cardinality, Framework

from .interface import (
    INTERFACE_VERSION,
    PmlComm,
    PmlComponent,
    PmlMessage,
    PmlModule,
    PmlRequest,
    ProbeStatus,
    SendMode,
    SizedRecvRequest,
)

framework = Framework.of(
    PmlComponent,
    "ompi",
    Cardinality.ONE,
    "point-to-point messaging: matching of messages to receives and the protocols that move them",
)

__all__ = [
    "INTERFACE_VERSION",
    "PmlComm",
    "PmlComponent",
    "PmlMessage",
    "PmlModule",
    "PmlRequest",
    "ProbeStatus",
    "SendMode",
    "SizedRecvRequest",
    "framework",
]
