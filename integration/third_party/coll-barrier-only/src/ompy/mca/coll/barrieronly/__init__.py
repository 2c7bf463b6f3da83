"""A coll component that implements barrier on COMM_WORLD alone (dissemination algorithm)."""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll import CollComponent, CollModule
from ompy.ompi.mca.coll.base import next_tag, recv, send
from ompy.opal.mca import Offer

__version__ = "1.0.0"

#: How many barriers this process ran through the component (for tests and the curious).
BARRIERS = 0
_NOTHING = memoryview(b"")


class BarrierOnlyCollModule(CollModule):
    """Only ``barrier``: everything else falls back to the lower-priority components."""

    def barrier(self, comm: Any) -> None:
        """Dissemination barrier: in round k, signal rank + 2^k and wait for rank - 2^k."""
        global BARRIERS
        tag = next_tag(comm)
        rank, size = comm.rank, comm.size
        distance = 1
        while distance < size:
            outgoing = send(comm, _NOTHING, (rank + distance) % size, tag)
            incoming = recv(comm, memoryview(bytearray(0)), (rank - distance) % size, tag)
            comm.engine.wait_until(lambda a=outgoing, b=incoming: a.complete and b.complete)
            for request in (outgoing, incoming):
                if request.exception is not None:
                    raise request.exception
            distance *= 2
        BARRIERS += 1


class BarrierOnlyCollComponent(CollComponent):
    """Runs on COMM_WORLD (context id 0) only, above basic."""

    name = "barrieronly"
    version = __version__
    description = "a dissemination barrier on COMM_WORLD, and nothing else"
    default_priority = 50

    def query(self, context: Any) -> Offer[CollModule] | None:
        if context.context_id != 0:
            return None  # like a barrier network wired to all the nodes: the world only
        return Offer(self.priority, BarrierOnlyCollModule())
