"""Always offer, below ``env``: whoever has no launcher is rank 0 of a job of one.

The job id is ``s<pid>``; the session directory is a fresh path under the temporary directory
that the run-time creates at init and removes at finalize.  There is no control server: the
run-time keeps the modex in the process.
"""

from __future__ import annotations

import os
import secrets
import socket
import tempfile
from collections.abc import Mapping

import attrs

from ompy.opal.mca import Offer
from ompy.orte.mca.ess import EssComponent, EssModule, Identity

from . import __version__


@attrs.frozen
class SingletonEssModule(EssModule):
    pid: int

    def identity(self) -> Identity:
        jobid = f"s{self.pid}"
        session = f"ompy-session-{jobid}-{secrets.token_hex(4)}"
        host = socket.gethostname()
        return Identity(
            jobid=jobid,
            rank=0,
            size=1,
            local_rank=0,
            local_size=1,
            node_id=0,
            node_name=host,
            oversubscribed=False,
            session_dir=os.path.join(tempfile.gettempdir(), session),
            singleton=True,
            rank_nodes=(0,),
            node_names=(host,),
        )


class SingletonEssComponent(EssComponent):
    """Identity of a process started without a launcher."""

    name = "singleton"
    version = __version__
    description = "a process started without a launcher is rank 0 of a job of size 1"
    default_priority = 10

    def query(self, context: Mapping[str, str] | None) -> Offer[EssModule] | None:
        return Offer(self.priority, SingletonEssModule(os.getpid()))
