"""What the portability layer knows about a process of the job: who it is and where it runs.

Transports need a peer's identity (job and rank, to find its contact information in the modex)
and its placement (node, to decide whether loopback or shared memory can reach it), but the
run-time that knows these facts lives in a higher layer.  The run-time therefore builds
:class:`Proc` values and hands them down; opal never asks the run-time itself.
"""

from __future__ import annotations

import attrs


def _non_negative(_instance: object, attribute: attrs.Attribute, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"Proc.{attribute.name} must be an integer >= 0, got {value!r}")


@attrs.frozen
class Proc:
    """One process of a job, as seen by any process of that job.

    ``node_id`` is the run-time's number for the node (equal ids mean the same host);
    ``node_name`` is for messages only.  ``local_rank`` numbers the job's processes on one node.
    """

    jobid: str
    rank: int = attrs.field(validator=_non_negative)
    node_id: int = attrs.field(default=0, validator=_non_negative)
    node_name: str = "localhost"
    local_rank: int = attrs.field(default=0, validator=_non_negative)

    def same_process(self, other: Proc) -> bool:
        """Whether ``other`` describes this very process."""
        return self.jobid == other.jobid and self.rank == other.rank

    def same_node(self, other: Proc) -> bool:
        """Whether ``other`` runs on the same node (loopback and shared memory can reach it)."""
        return self.node_id == other.node_id

    def __str__(self) -> str:
        return f"rank {self.rank} of job {self.jobid} on {self.node_name}"
