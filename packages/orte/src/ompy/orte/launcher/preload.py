"""Warming a process that will fork ranks: the ``ompy.preload`` entry points of the layers.

A fork server (plm ``local``) imports, once, what every rank of a Python job would import on
its own, and forks the ranks from that state.  What is worth importing is known to the layers
above the run-time (the MPI layer knows its API and components), which orte must not import;
so each layer publishes a callable in the ``ompy.preload`` group and orte runs whatever is
installed.

The contract of an entry: import modules and fill caches that do not depend on the rank
(identity variables, MCA parameters of the rank), and leave nothing that must not be shared
across ``fork``: no thread, no socket, no open file, no initialized MPI or run-time.  State that
must differ per process (random generators) is reseeded with ``os.register_at_fork``.
"""

from __future__ import annotations

GROUP = "ompy.preload"


def run_preloads() -> list[str]:
    """Run every installed preload entry, in name order; return what failed, one line each.

    A failure is not fatal: the ranks then import that part themselves, and report any real
    problem when they do.
    """
    from ompy.opal.mca.entry_points import entry_points

    failures: list[str] = []
    for entry_point in sorted(entry_points(GROUP), key=lambda entry_point: entry_point.name):
        try:
            entry_point.load()()
        except Exception as error:
            failures.append(
                f"{entry_point.name} ({entry_point.value}): {type(error).__name__}: {error}"
            )
    return failures


def preload() -> None:
    """orte's own entry: what a launched rank imports to start its run-time (not start it)."""
    import encodings.idna  # noqa: F401 - socket encodes the launcher's host name with it

    import ompy.orte.control.client
    import ompy.orte.layer  # the runtime's init registers the layer's parameters
    import ompy.orte.runtime  # noqa: F401
    from ompy.opal.mca.discovery import list_candidates, load_components
    from ompy.orte.mca.ess import framework as ess

    candidates, _failures = list_candidates(ess.group)
    load_components(ess, candidates)
