"""Making a window's segment: every rank's size, rank 0 creates, all attach, rank 0 unlinks.

Collective over the window's communicator, on the API layer's internal collectives (reserved
tags, so no user message can match them):

1. an allgather of every rank's size and displacement unit (every rank computes the same
   :class:`~.layout.Layout` from them);
2. rank 0 creates the segment through the shmem framework and broadcasts its descriptor as
   JSON (or the reason it could not);
3. every rank attaches and opens its record-lock fd while the name exists, then an allgather
   of the outcomes, after which rank 0 unlinks the name: from then on nothing of the window is
   left in /dev/shm, whatever happens to any process, and the memory goes away with the last
   mapping.  All ranks fail together (with every rank's reason) or none does.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from ompy.ompi.api.communicator import Communicator
from ompy.ompi.api.internal import allgather, bcast_bytes
from ompy.ompi.errors import ERR_WIN
from ompy.ompi.errors import Exception as MPIException
from ompy.opal.mca.shmem import Segment, SegmentDescriptor


def establish(
    comm: Communicator,
    create: Callable[[], Segment],
    attach: Callable[[SegmentDescriptor], Segment],
    prepare: Callable[[Segment], Any],
    discard: Callable[[Any], None],
) -> tuple[Segment, Any]:
    """The attached segment and what ``prepare(segment)`` made of it, on every rank.

    ``create`` runs on rank 0, ``attach`` on the others; ``prepare`` (every rank, while the
    name exists) opens what needs the name, e.g. the lock fd; ``discard`` undoes it when
    another rank failed.  Raises ``MPI.Exception`` (``ERR_WIN``) on every rank if any rank
    failed.
    """
    segment: Segment | None = None
    plan: dict[str, Any]
    if comm.rank == 0:
        try:
            segment = create()
            plan = {"descriptor": segment.descriptor.to_dict()}
        except Exception as error:  # told to everyone, who fail with it
            plan = {"error": f"rank 0 could not create the window's segment: {error}"}
        payload = bcast_bytes(comm, json.dumps(plan).encode())
    else:
        payload = bcast_bytes(comm, None)
        plan = json.loads(bytes(payload))
    if "error" in plan:
        raise MPIException(ERR_WIN, f"osc sm: {plan['error']}")
    prepared: Any = None
    outcome = ""
    try:
        if segment is None:
            segment = attach(SegmentDescriptor.from_dict(plan["descriptor"]))
        prepared = prepare(segment)
    except Exception as error:  # gathered: everyone fails with every reason
        outcome = f"rank {comm.rank}: {error}"
    try:
        outcomes = allgather(comm, outcome)
    finally:
        if comm.rank == 0 and segment is not None:
            segment.unlink()  # everyone has attached or given up: the name is no longer needed
    failures = [text for text in outcomes if text]
    if failures:
        if prepared is not None:
            with contextlib.suppress(Exception):
                discard(prepared)
        if segment is not None:
            with contextlib.suppress(Exception):
                segment.detach()
        raise MPIException(
            ERR_WIN,
            f"osc sm: the window's shared memory could not be set up: {'; '.join(failures)}",
        )
    assert segment is not None
    return segment, prepared
