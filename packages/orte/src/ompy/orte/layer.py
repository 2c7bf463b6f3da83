"""The orte layer's self-description, published in the ``ompy.layers`` entry-point group."""

from __future__ import annotations

from ompy.opal.binding import POLICIES
from ompy.opal.layer import Layer
from ompy.opal.mca.params import ParamType, Registry

from . import __version__


def register_params(registry: Registry) -> None:
    """Layer-wide parameters of the run-time layer (``orte_<name>``)."""
    scope = ("orte", "")
    registry.register(
        "orte_abort_timeout",
        ParamType.FLOAT,
        3.0,
        "Seconds ompy run waits after sending SIGTERM to the ranks of a failed or interrupted "
        "job before it kills the remaining ones with SIGKILL",
        level=4,
        minimum=0,
        scope=scope,
    )
    registry.register(
        "orte_stack_timeout",
        ParamType.FLOAT,
        2.0,
        "Seconds ompy run waits for the ranks' Python stacks when it reports them (--timeout, "
        "SIGUSR1); ranks that do not answer in time are reported without a stack",
        level=6,
        minimum=0,
        scope=scope,
    )
    registry.register(
        "orte_connect_timeout",
        ParamType.FLOAT,
        10.0,
        "Seconds a rank may take to connect to ompy run's control server and prove it knows "
        "the job secret: ompy run drops a connection that takes longer and the rank gives up "
        "(raise it on heavily oversubscribed or loaded nodes)",
        level=6,
        minimum=0.001,
        scope=scope,
    )
    registry.register(
        "orte_exit_grace",
        ParamType.FLOAT,
        1.0,
        "Seconds a rank that calls sys.exit before every other rank reached MPI Finalize waits "
        "for them: ranks that all end within it (each calling sys.exit(main()), say) finalize "
        "together, a normal end; otherwise the rank leaves without finalizing and ompy run "
        "ends the job with its exit code (the others may be blocked on it)",
        level=6,
        minimum=0,
        scope=scope,
    )
    registry.register(
        "orte_bind_to",
        ParamType.ENUM,
        "auto",
        "Processors each rank is bound to, decided on each node: 'core' (a core per rank), "
        "'package' (a package, i.e. socket, per rank), 'none', or 'auto' (a core per rank "
        "where a node runs at most two ranks, else a package per rank, as mpirun does). A node "
        "with more ranks than cores (or packages) is not bound. Same as ompy run --bind-to",
        level=3,
        choices=POLICIES,
        scope=scope,
    )
    registry.register(
        "orte_drain_timeout",
        ParamType.FLOAT,
        2.0,
        "Seconds ompy run keeps forwarding output after the last rank exited, for processes "
        "the ranks started that still hold the output pipes open",
        level=7,
        minimum=0,
        scope=scope,
    )


layer = Layer(
    "orte",
    "ompy-orte",
    __version__,
    "run-time layer: ompy run, launch, stdio forwarding, modex, error management",
    register_params,
)
