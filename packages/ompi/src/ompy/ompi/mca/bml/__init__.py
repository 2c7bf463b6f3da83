"""The bml framework: which BTL modules reach which peer, and how to spread traffic over them.

The BML (BTL management layer) sits between the PML and the transports.  Its one module per
process selects the BTL modules (:func:`~ompy.opal.mca.btl.base.select_btls`), asks each which
peers it reaches, and keeps per peer a :class:`BmlEndpoint`: the modules to use for eager
fragments (lowest latency), for send/receive streaming and for RDMA, each weighted by bandwidth.
Components register in ``ompy.mca.bml`` (``ompy-bml-r2`` is the baseline); one of them runs.
"""

from __future__ import annotations

from ompy.opal.mca import Cardinality, Framework

from .errors import BmlError, BmlUnreachableError
from .interface import (
    INTERFACE_VERSION,
    BmlBtl,
    BmlComponent,
    BmlContext,
    BmlEndpoint,
    BmlModule,
)

framework = Framework.of(
    BmlComponent,
    "ompi",
    Cardinality.ONE,
    "BTL management: per-peer lists of transport endpoints and bandwidth-weighted scheduling",
)

__all__ = [
    "INTERFACE_VERSION",
    "BmlBtl",
    "BmlComponent",
    "BmlContext",
    "BmlEndpoint",
    "BmlError",
    "BmlModule",
    "BmlUnreachableError",
    "framework",
]
