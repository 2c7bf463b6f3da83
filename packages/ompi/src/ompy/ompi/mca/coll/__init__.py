"""The coll framework: collective operations (barrier, bcast, reductions, ...) per communicator.

Components are found through the entry-point group ``ompy.mca.coll`` (``ompy-coll-basic`` is the
baseline, correct for everything; faster components implement what they do best) and selected
with the ``coll`` parameter like any framework.  Every component that wants to run on a new
communicator is kept; for each operation the communicator's table takes the highest-priority
module that implements it (:mod:`ompy.ompi.mca.coll.base`).  The interface for component
authors is :mod:`ompy.ompi.mca.coll.interface`.
"""

from __future__ import annotations

from ompy.opal.mca import Cardinality, Framework

from .interface import (
    BLOCKING,
    INTERFACE_VERSION,
    NEIGHBOR_BLOCKING,
    NEIGHBOR_OBJECT_OPERATIONS,
    NONBLOCKING,
    OBJECT_OPERATIONS,
    OPERATIONS,
    PERSISTENT,
    CollComm,
    CollComponent,
    CollModule,
    Combine,
    InterCollComm,
    Items,
    PersistentCollective,
)

framework = Framework.of(
    CollComponent,
    "ompi",
    Cardinality.MANY,
    "collective operations: the algorithms of barrier, broadcast, reductions, ... per communicator",
)

__all__ = [
    "BLOCKING",
    "INTERFACE_VERSION",
    "NEIGHBOR_BLOCKING",
    "NEIGHBOR_OBJECT_OPERATIONS",
    "NONBLOCKING",
    "OBJECT_OPERATIONS",
    "OPERATIONS",
    "PERSISTENT",
    "CollComm",
    "CollComponent",
    "CollModule",
    "Combine",
    "InterCollComm",
    "Items",
    "PersistentCollective",
    "framework",
]
