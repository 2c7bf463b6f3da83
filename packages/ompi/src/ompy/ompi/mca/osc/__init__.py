"""The osc framework: one-sided communication (``MPI.Win``).

Components are found through the entry-point group ``ompy.mca.osc`` (``ompy-osc-pt2pt``
serves every window over the PML; ``ompy-osc-sm`` windows whose processes share a node) and
selected with the ``osc`` parameter, once per window, as Open MPI selects per window.  The
contracts are in :mod:`.interface`, the per-instance selection in :mod:`.base.select`.
"""

from __future__ import annotations

from ompy.opal.mca import Cardinality, Framework

from .interface import (
    FLAVOR_ALLOCATE,
    FLAVOR_CREATE,
    FLAVOR_DYNAMIC,
    FLAVOR_NAMES,
    FLAVOR_SHARED,
    INTERFACE_VERSION,
    LOCK_EXCLUSIVE,
    LOCK_SHARED,
    MODEL_SEPARATE,
    MODEL_UNIFIED,
    OscComponent,
    OscModule,
    OscQuery,
    Target,
    WindowSetup,
)

framework = Framework.of(
    OscComponent,
    "ompi",
    Cardinality.ONE,
    "one-sided communication: RMA windows, their operations and synchronisation",
)

__all__ = [
    "FLAVOR_ALLOCATE",
    "FLAVOR_CREATE",
    "FLAVOR_DYNAMIC",
    "FLAVOR_NAMES",
    "FLAVOR_SHARED",
    "INTERFACE_VERSION",
    "LOCK_EXCLUSIVE",
    "LOCK_SHARED",
    "MODEL_SEPARATE",
    "MODEL_UNIFIED",
    "OscComponent",
    "OscModule",
    "OscQuery",
    "Target",
    "WindowSetup",
    "framework",
]
