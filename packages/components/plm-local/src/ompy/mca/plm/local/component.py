"""The component: offers the local launcher when every node of the job is this host."""

from __future__ import annotations

from collections.abc import Sequence

from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamType
from ompy.orte.launcher.job import Node
from ompy.orte.mca.plm import PlmComponent

from . import __version__
from .launcher import LocalPlmModule


class LocalPlmComponent(PlmComponent):
    """Starts ranks on this host: fork/exec, or forked by the job's fork server.

    It offers for every job, so that when the allocation names other hosts the user gets its
    clear error (which hosts cannot be reached) rather than "no plm component can run".
    """

    name = "local"
    version = __version__
    description = (
        "start the ranks on this host, each in its own session (Python programs: forked from "
        "a preloaded fork server)"
    )
    default_priority = 10

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "fork_server",
            ParamType.BOOL,
            True,
            "Start the ranks of a Python program (this interpreter with -c, -m or a script) by "
            "forking them from one helper process that has already imported what they need, "
            "instead of executing a new interpreter per rank; off: always fork/exec",
            level=5,
        )

    def query(self, context: Sequence[Node]) -> Offer[LocalPlmModule] | None:
        return Offer(self.priority, LocalPlmModule(fork_server=self.param("fork_server")))
