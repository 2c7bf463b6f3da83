"""The MPI layer's ``ompy.preload`` entry: what a rank of ``from ompy import MPI`` imports.

A fork server runs it once (see :mod:`ompy.orte.launcher.preload` for the contract) and forks
every rank from the result, so ``-n 8`` pays for these imports once instead of eight times.
It imports the MPI API without initializing MPI, and the components of every framework a rank
opens (opal's and ompi's; the run-time layer preloads its own), which also fills stevedore's
entry-point cache, and lets each component prepare what forked ranks inherit
(:meth:`~ompy.opal.mca.component.Component.preload`).  Nothing is opened, selected or
registered with the run-time: that depends on the rank's parameters and identity.
"""

from __future__ import annotations

import importlib
import os
import sys

#: Layers whose frameworks ranks open in MPI initialization.
RANK_LAYERS = ("opal", "ompi")


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
    from ompy.opal.mca.discovery import installed_frameworks, list_candidates, load_components

    # A framework whose description cannot be loaded is each rank's to report (ompy info
    # shows it too); here it is simply not preloaded.
    for framework in installed_frameworks(failures=[]):
        if framework.layer not in RANK_LAYERS:
            continue
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
