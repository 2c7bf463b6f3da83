"""Per-communicator selection: ask every coll component, build the table, enable the modules.

The framework is opened once per process, on the first communicator (entry-point scan, imports
of the admitted components, ``register_params``, ``open``); each new communicator then costs
one ``query`` per component.  :func:`comm_select` is called by communicator creation,
:func:`comm_unselect` when the communicator is freed, and :func:`finalize` by ``MPI.Finalize``
once the predefined communicators are gone: it tears down the modules of any communicator still
alive, then closes the components (a component's ``close`` may release what its modules
shared, so no module may outlive it).

A component whose ``query`` raises is skipped (and reported by ``ompy info``) unless the user
asked for it by name (``coll = tuned,basic``), which makes the failure an error; an offer with
a negative priority is ignored, so ``coll_<name>_priority = -1`` turns a component off.
"""

from __future__ import annotations

import threading
from typing import Any

from ompy.opal.mca import ComponentLoadError, OpenFramework, open_framework
from ompy.opal.mca.params import Registry
from ompy.opal.mca.params import registry as process_registry

from ....errors import ERR_INTERN, ERR_OTHER
from ....errors import Exception as MPIException
from .. import framework
from ..interface import CollModule
from .table import CollTable, build_table

_lock = threading.Lock()
_opened: OpenFramework | None = None
#: id -> communicator whose modules are enabled, for :func:`finalize` (a freed one leaves; one
#: the program dropped without freeing stays, as the PML keeps it too until Finalize).
_selected: dict[int, Any] = {}


def opened_framework(registry: Registry | None = None) -> OpenFramework:
    """The coll framework of this process, opened on first use with ``registry``.

    ``registry`` defaults to the process-wide parameter registry.  Asking with another registry
    once the framework is open is an error: call :func:`reset_selection` first (tests do).
    """
    global _opened
    with _lock:
        if _opened is not None:
            if registry is not None and registry is not _opened.registry:
                raise MPIException(
                    ERR_OTHER,
                    "the coll framework of this process is already open with another parameter "
                    "registry; call ompy.ompi.mca.coll.base.reset_selection() before selecting "
                    "again",
                )
            return _opened
        _opened = open_framework(framework, registry or process_registry())
        return _opened


def reset_selection() -> None:
    """Close the components and forget the framework (tests, tools); tables already built stay."""
    global _opened
    with _lock:
        if _opened is not None:
            _opened.close()
        _opened = None
        _selected.clear()


def is_open() -> bool:
    """Whether the coll framework of this process is open (components loaded, not closed)."""
    return _opened is not None


def finalize() -> None:
    """Close the coll framework at ``MPI.Finalize``: modules first, then the components.

    The modules of communicators still alive (the program did not free them) are disabled as
    on ``Comm.Free``; then every component's ``close`` runs, in the reverse order of opening.
    Calling it again, or before any communicator, does nothing.
    """
    global _opened
    left = list(_selected.values())
    _selected.clear()
    for comm in left:
        if _opened is not None:
            _opened.say(10, f"tearing down the modules of {_label(comm)}, never freed")
        comm_unselect(comm)
    with _lock:
        opened, _opened = _opened, None
    if opened is not None:
        opened.say(10, "closing the coll components")
        opened.close()


def comm_select(comm: Any, registry: Registry | None = None) -> CollTable:
    """Build ``comm``'s table from the offers of every coll component, and enable its modules."""
    opened = opened_framework(registry)
    offers: list[tuple[str, CollModule]] = []
    for component, offer in opened.select_many(comm):
        if offer.priority < 0:
            opened.say(20, f"{component.name} is off on {_label(comm)} (priority {offer.priority})")
            continue
        if not isinstance(offer.module, CollModule):
            raise ComponentLoadError(
                f"the coll component '{component.name}' offered {offer.module!r} for "
                f"{_label(comm)}, which is not a CollModule (ompy.ompi.mca.coll.CollModule)"
            )
        offers.append((component.name, offer.module))
    running = ", ".join(name for name, _ in offers) or "none"
    table, used = build_table(offers, getattr(comm, "name", str(comm)), running)
    if opened.verbosity >= 10:
        opened.say(10, f"{_label(comm)}: {table.describe()}")
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
            f"the coll component '{name}' failed to set up its module on {_label(comm)}: {error}",
        ) from error
    _selected[id(comm)] = comm
    return table


def comm_unselect(comm: Any) -> None:
    """Disable the modules of ``comm``'s table (the communicator is being freed)."""
    table: CollTable | None = getattr(comm, "coll", None)
    if table is None:
        return
    _selected.pop(id(comm), None)
    modules, table.modules = table.modules, []
    for _name, module in reversed(modules):
        module.disable(comm)


def _label(comm: Any) -> str:
    return f"communicator {getattr(comm, 'name', comm)!r} (context id {comm.context_id})"
