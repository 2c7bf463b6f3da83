"""The MPI layer's ``ompy.preload`` entry: what a rank of ``from ompy import MPI`` imports.

A fork server runs it once (see :mod:`ompy.orte.launcher.preload` for the contract) and forks
every rank from the result, so ``-n 8`` pays for these imports once instead of eight times.
It imports the MPI API without initializing MPI, and the components of every framework a rank
opens in initialization or at its first reduction (the run-time layer preloads its own),
which also validates the entry-point listing (:mod:`ompy.opal.mca.entry_points`) that forked
ranks inherit, and lets each component prepare what forked ranks inherit
(:meth:`~ompy.opal.mca.component.Component.preload`).  Nothing is opened,
selected or registered with the run-time: that depends on the rank's parameters and identity.

The preload is on the critical path of every Python job (the ranks are forked when it is
done), so frameworks that a rank opens only when a program asks for them (osc at the first
window, topo at the first reordered topology) are left out: a program that uses them imports
their components after its fork, the others never.  ``tests/test_preload.py`` checks that what
a rank imports to initialize, meet in a barrier and reduce is all preloaded.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ompy.opal.mca import Framework


def rank_frameworks() -> list[Framework[Any]]:
    """The frameworks a rank opens in MPI initialization (shmem, btl, pml, bml, coll for the
    world) or at its first reduction (op): those whose components the preload imports."""
    from ompy.opal.mca.btl import framework as btl
    from ompy.opal.mca.shmem import framework as shmem

    from .mca.bml import framework as bml
    from .mca.coll import framework as coll
    from .mca.op import framework as op
    from .mca.pml import framework as pml

    return [shmem, btl, pml, bml, coll, op]


def preload() -> None:
    """Import ``ompy.MPI``'s modules and the rank frameworks' components; initialize nothing."""
    _import_mpi_api()
    _import_components()
    os.register_at_fork(after_in_child=_reseed_numpy)


def _import_mpi_api() -> None:
    """Everything ``ompy.MPI`` imports, but not ``ompy.MPI`` itself.

    Importing ``ompy.MPI`` initializes MPI (``rc.initialize``), so it is imported with that
    switched off and then forgotten: a rank's own ``from ompy import MPI`` runs the module
    again (cheap, every dependency is loaded) and initializes as usual.
    """
    from ompy import rc

    saved = rc.initialize
    rc.initialize = False
    try:
        importlib.import_module("ompy.MPI")
    finally:
        rc.initialize = saved
        sys.modules.pop("ompy.MPI", None)
        package = sys.modules.get("ompy")
        if package is not None and "MPI" in vars(package):
            delattr(package, "MPI")


def _import_components() -> None:
    from ompy.opal.mca.discovery import list_candidates, load_components

    # A component that cannot be loaded is each rank's to report (ompy info shows it too);
    # here it is simply not preloaded.
    for framework in rank_frameworks():
        candidates, _failures = list_candidates(framework.group)
        components, _failures = load_components(framework, candidates)
        for component in components:
            try:
                component.preload()
            except Exception:  # not fatal: each rank then does that work itself
                continue


def _reseed_numpy() -> None:
    """Forked ranks must not share numpy's legacy global generator (``random`` reseeds itself)."""
    random = sys.modules.get("numpy.random")
    if random is not None:
        random.seed()
