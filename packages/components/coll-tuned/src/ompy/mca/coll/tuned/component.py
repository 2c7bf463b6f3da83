"""The ``tuned`` component: its parameters, and a module for every intra-communicator.

Like Open MPI's ``coll/tuned`` it ranks above ``basic`` (priority 30 against 10), implements
the operations it has better algorithms for and leaves the rest (most nonblocking forms) to
``basic``.  Each operation's algorithm is chosen per call by the
rules of :mod:`.decision`, or forced with ``coll_tuned_<op>_algorithm``.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll import CollComponent, CollModule
from ompy.opal import output
from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamType

from . import __version__
from .decision import ALGORITHMS, MEASURE
from .module import SEGMENTS, Settings, TunedCollModule

SEGMENTED = {
    "bcast": "pipeline, binary",
    "reduce": "pipeline",
    "allreduce": "ring",
}


class TunedCollComponent(CollComponent):
    """Collective algorithms chosen by communicator and message size, each forceable."""

    name = "tuned"
    version = __version__
    description = (
        "collective algorithms chosen by communicator size and message size "
        "(recursive doubling, ring, Rabenseifner, Bruck, pipelines, ...)"
    )
    default_priority = 30

    def register_params(self) -> None:
        """The priority, one ``<op>_algorithm`` per operation, the segment size, verbosity."""
        super().register_params()
        for operation, choices in ALGORITHMS.items():
            self.register_param(
                f"{operation}_algorithm",
                ParamType.ENUM,
                "auto",
                f"Algorithm of {operation} ('auto': chosen by communicator size and the size of "
                f"{MEASURE[operation]}); a forced algorithm that cannot run a call (e.g. one "
                "that needs a commutative operation) gives way to the automatic choice",
                choices=choices,
                level=5,
            )
        for operation, default in SEGMENTS.items():
            self.register_param(
                f"{operation}_segment_size",
                ParamType.INT,
                default,
                f"Bytes per segment of the segmented {operation} algorithms "
                f"({SEGMENTED[operation]}); 0: whole messages",
                minimum=0,
                level=6,
            )
        self.register_param(
            "verbose",
            ParamType.INT,
            0,
            "Verbosity of coll/tuned (logger ompy.coll.tuned; the more verbose of this and "
            "coll_base_verbose wins): 1 notes each forced algorithm set aside for the automatic "
            "choice, 20 prints the algorithm of every call",
            minimum=0,
            maximum=100,
            level=8,
        )

    def open(self) -> None:
        """Read the parameters once: every communicator's module shares them.

        A bad value raises here, and the framework turns it into the job's error (naming the
        parameter, the value and where it came from) rather than running without tuned.
        """
        verbose = self.param("verbose")
        output.apply_own_verbosity(self.log, verbose)
        self.settings = Settings(
            forced={op: self.param(f"{op}_algorithm") for op in ALGORITHMS},
            segments={op: self.param(f"{op}_segment_size") for op in SEGMENTS},
            verbose=verbose,
            log=self.log,
        )

    def query(self, context: Any) -> Offer[CollModule] | None:
        """Run on every intra-communicator (the algorithms need nothing but point-to-point)."""
        if context.is_inter:
            return None
        return Offer(self.priority, TunedCollModule(self.settings))
