"""Choosing the topo component that places processes, and checking what it answers.

Each instance (``Instance.topo``) has one :class:`TopoSelection`: the framework is opened the
first time a program asks for a reordered topology (``reorder=True``, ``Cart_map``,
``Graph_map``) and stays open until ``MPI.Finalize``.  Topologies created without reordering
never open it: the processes keep their order, which needs no component.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from ompy.opal.mca import NoComponentError, OpenFramework, open_framework
from ompy.opal.mca.params import Registry

from ....constants import UNDEFINED
from ....errors import ERR_INTERN
from ....errors import Exception as MPIException
from .. import framework
from ..interface import (
    CART,
    DIST_GRAPH,
    GRAPH,
    KIND_NAMES,
    CartMapRequest,
    DistGraphMapRequest,
    GraphMapRequest,
    TopoComponent,
    TopoModule,
    TopoQuery,
)


class TopoSelection:
    """The topo framework of one instance, opened on first use."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._opened: OpenFramework[TopoComponent] | None = None

    def _framework(self) -> OpenFramework[TopoComponent]:
        with self._lock:
            if self._opened is None:
                self._opened = open_framework(framework, self.registry)
                for component in self._opened.components:
                    self._opened.log.info("%s is open", component.name)
            return self._opened

    def module(self, kind: int, size: int) -> tuple[str, TopoModule]:
        """The best offer for a topology of ``kind`` over ``size`` processes: (name, module).

        Raises ``MPI.Exception`` (``ERR_INTERN``) naming what was tried when no component
        offers, as Open MPI fails a topology call with no topo component.
        """
        opened = self._framework()
        try:
            component, offer = opened.select_one(TopoQuery(kind, size))
        except NoComponentError as error:
            raise MPIException(
                ERR_INTERN,
                f"cannot place the processes of a {KIND_NAMES[kind]} topology: {error}; "
                "install ompy-topo-basic, which keeps the processes in order",
            ) from None
        module = offer.module
        if not isinstance(module, TopoModule):
            raise MPIException(
                ERR_INTERN,
                f"the topo component '{component.name}' offered a "
                f"{type(module).__name__}, which is not a TopoModule",
            )
        return component.name, module

    def cart_map(self, request: CartMapRequest, members: int) -> tuple[int, ...]:
        """The new rank of every parent rank on a Cartesian grid of ``members`` cells."""
        name, module = self.module(CART, request.size)
        return checked_placement(module.cart_map(request), request.size, members, name)

    def graph_map(self, request: GraphMapRequest, members: int) -> tuple[int, ...]:
        """The new rank of every parent rank on a graph of ``members`` nodes."""
        name, module = self.module(GRAPH, request.size)
        return checked_placement(module.graph_map(request), request.size, members, name)

    def dist_graph_map(self, request: DistGraphMapRequest) -> tuple[int, ...]:
        """The new rank of every parent rank in a distributed graph (every process stays)."""
        name, module = self.module(DIST_GRAPH, request.size)
        return checked_placement(module.dist_graph_map(request), request.size, request.size, name)

    def opened(self) -> OpenFramework[TopoComponent] | None:
        """The open framework, or ``None`` before first use."""
        return self._opened

    def finalize(self) -> None:
        """Close the framework at ``MPI.Finalize``; calling it again does nothing."""
        with self._lock:
            opened, self._opened = self._opened, None
        if opened is not None:
            opened.log.info("closing the topo components")
            opened.close()


def identity(size: int, members: int) -> tuple[int, ...]:
    """The placement that keeps the order: the first ``members`` ranks, the rest left out."""
    return tuple(rank if rank < members else UNDEFINED for rank in range(size))


def checked_placement(
    answer: Sequence[int], size: int, members: int, component: str
) -> tuple[int, ...]:
    """``answer`` if it places ``members`` of ``size`` processes on ranks ``0..members-1``."""
    placement = tuple(answer)
    placed = sorted(rank for rank in placement if rank != UNDEFINED)
    if len(placement) != size or placed != list(range(members)):
        raise MPIException(
            ERR_INTERN,
            f"the topo component '{component}' answered the placement {list(placement)}; it "
            f"must give each of the {size} processes a distinct new rank in 0..{members - 1} "
            f"(exactly {members} of them) or UNDEFINED",
        )
    return placement
