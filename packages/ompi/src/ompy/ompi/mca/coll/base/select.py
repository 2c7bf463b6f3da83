"""Per-communicator selection: ask every coll component, build the table, enable the modules.

Each instance (``ompy.ompi.instance.Instance.coll``) has one :class:`CollSelection`: the
framework is opened on its first communicator (entry-point scan, imports of the admitted
components, ``register_params``, ``open``); each new communicator then costs one ``query`` per
component.  :func:`comm_select` is called by communicator creation, :func:`comm_unselect` when
the communicator is freed, and :meth:`CollSelection.finalize` by the instance's teardown once
the predefined communicators are gone: it tears down the modules of any communicator still
alive, then closes the components (a component's ``close`` may release what its modules
shared, so no module may outlive it).

A component whose ``query`` raises is skipped (and reported by ``ompy info``) unless the user
asked for it by name (``coll = tuned,basic``), which makes the failure an error; an offer with
a negative priority is ignored, so ``coll_<name>_priority = -1`` turns a component off.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ompy.opal.mca import ComponentLoadError, OpenFramework, open_framework
from ompy.opal.mca.params import Registry

from ....errors import ERR_INTERN
from ....errors import Exception as MPIException
from .. import framework
from ..interface import CollModule
from .table import CollTable, build_table


class CollSelection:
    """The coll framework of one instance: opened on the first communicator, closed at the end.

    It remembers the communicators whose modules it enabled, so that :meth:`finalize` can
    tear down the modules of any communicator the program never freed before the components
    close.
    """

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._opened: OpenFramework | None = None
        #: id -> communicator whose modules are enabled (a freed one leaves; one the program
        #: dropped without freeing stays, as the PML keeps it too until Finalize).
        self._selected: dict[int, Any] = {}

    @property
    def is_open(self) -> bool:
        """Whether the framework is open (components loaded, not closed)."""
        return self._opened is not None

    def opened(self) -> OpenFramework:
        """The open framework (components, failures, registry), opening it on first use."""
        with self._lock:
            if self._opened is None:
                self._opened = open_framework(framework, self.registry)
            return self._opened

    def comm_select(self, comm: Any) -> CollTable:
        """Build ``comm``'s table from every coll component's offer, and enable its modules."""
        opened = self.opened()
        offers: list[tuple[str, CollModule]] = []
        for component, offer in opened.select_many(comm):
            if offer.priority < 0:
                opened.log.debug(
                    "%s is off on %s (priority %d)", component.name, _label(comm), offer.priority
                )
                continue
            if not isinstance(offer.module, CollModule):
                raise ComponentLoadError(
                    f"the coll component '{component.name}' offered {offer.module!r} for "
                    f"{_label(comm)}, which is not a CollModule (ompy.ompi.mca.coll.CollModule)"
                )
            offers.append((component.name, offer.module))
        running = ", ".join(name for name, _ in offers) or "none"
        table, used = build_table(offers, comm.name, running)
        if opened.log.isEnabledFor(logging.INFO):
            opened.log.info("%s: %s", _label(comm), table.describe())
        enabled: list[tuple[str, CollModule]] = []
        try:
            for name, module in used:
                module.enable(comm)
                enabled.append((name, module))
        except Exception as error:
            for _name, module in reversed(enabled):
                module.disable(comm)
            raise MPIException(
                ERR_INTERN,
                f"the coll component '{name}' failed to set up its module on {_label(comm)}: "
                f"{error}",
            ) from error
        self._selected[id(comm)] = comm
        return table

    def comm_unselect(self, comm: Any) -> None:
        """Disable the modules of ``comm``'s table (the communicator is being freed)."""
        table: CollTable = comm.coll
        self._selected.pop(id(comm), None)
        modules, table.modules = table.modules, []
        for _name, module in reversed(modules):
            module.disable(comm)

    def finalize(self) -> None:
        """Close the framework at ``MPI.Finalize``: modules first, then the components.

        The modules of communicators still alive (the program did not free them) are disabled
        as on ``Comm.Free``; then every component's ``close`` runs, in the reverse order of
        opening.  Calling it again, or before any communicator, does nothing.
        """
        left = list(self._selected.values())
        self._selected.clear()
        for comm in left:
            if self._opened is not None:
                self._opened.log.info("tearing down the modules of %s, never freed", _label(comm))
            self.comm_unselect(comm)
        with self._lock:
            opened, self._opened = self._opened, None
        if opened is not None:
            opened.log.info("closing the coll components")
            opened.close()


def comm_select(comm: Any) -> CollTable:
    """``comm``'s coll table, from the coll framework of its instance."""
    return comm.instance.coll.comm_select(comm)


def comm_unselect(comm: Any) -> None:
    """Disable the modules of ``comm``'s table (the communicator is being freed)."""
    comm.instance.coll.comm_unselect(comm)


def _label(comm: Any) -> str:
    return f"communicator {comm.name!r} (context id {comm.context_id})"
