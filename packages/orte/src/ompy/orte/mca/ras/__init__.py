"""The ras framework (resource allocation): which hosts a job may use and how many slots each has.

A ras module turns what the user asked for (``--host``, ``--hostfile``, later a batch system's
allocation) into an :class:`~ompy.orte.launcher.job.Allocation`.  It returns ``None`` when it has
nothing to say, and the framework then falls back to the local host with one slot per usable
core (see :mod:`.base`).  One-of-many: the highest-priority willing component decides.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import ClassVar

import attrs

from ompy.opal.mca import Cardinality, Component, Framework, Offer
from ompy.orte.launcher.job import Allocation

INTERFACE_VERSION = (1, 0)


@attrs.frozen
class AllocationRequest:
    """What the command line asked for; both empty means "whatever this host offers"."""

    #: ``--host`` entries as typed, e.g. ``("node1:2", "node2")``.
    hosts: tuple[str, ...] = ()
    hostfile: Path | None = None


class RasModule(abc.ABC):
    """Produces the allocation of one job; :meth:`allocate` is its whole contract."""

    @abc.abstractmethod
    def allocate(self, request: AllocationRequest) -> Allocation | None:
        """The allocation for ``request``, or ``None`` to leave the default (the local host).

        Raises :class:`~ompy.orte.launcher.errors.LaunchError` for malformed host lists.
        """


class RasComponent(Component[AllocationRequest, RasModule]):
    """Base class of ras components (entry-point group ``ompy.mca.ras``).

    ``query`` is asked about what the command line requested.
    """

    framework: ClassVar[str] = "ras"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: AllocationRequest) -> Offer[RasModule] | None:
        """Offer a module that can allocate ``context``, or ``None`` to stay out."""
        return None


framework = Framework.of(
    RasComponent, "orte", Cardinality.ONE, "resource allocation: the hosts and slots a job may use"
)
