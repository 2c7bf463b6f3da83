"""Setting up a communicator's segment: rank 0 creates it, everyone attaches, rank 0 unlinks.

Three rounds of small point-to-point messages on a coll tag (the communicator's table does not
exist yet while its modules are enabled, so no per-call tag can be drawn; messages between two
ranks on one tag never overtake each other, so the handshake cannot mix with later traffic):

1. rank 0 creates the segment and sends every rank the *plan* (the segment descriptor and the
   layout parameters, so every rank uses rank 0's values) or the reason it could not;
2. every other rank attaches and answers with its *card* (its doorbell address) or its error;
3. rank 0 unlinks the segment (from then on a crash, even SIGKILL, leaves nothing in /dev/shm)
   and sends everyone the verdict: every rank's card, or every failure, so that all ranks fail
   together or none does.

Messages are JSON: nothing here unpickles what a peer sent.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from ompy.ompi.datatype.buffer import BufferSpec
from ompy.ompi.datatype.predefined import BYTE
from ompy.ompi.mca.coll.base import LAST_TAG, send
from ompy.opal.mca.shmem import Segment, SegmentDescriptor

#: The tag of the handshake (any coll tag works; see the module docstring).
TAG = LAST_TAG


class HandshakeError(RuntimeError):
    """Some rank could not create or attach the communicator's segment."""


def _send(comm: Any, dest: int, message: dict[str, Any]) -> Any:
    data = json.dumps(message).encode()
    return send(comm, memoryview(data), dest, TAG)


def _recv(comm: Any, source: int) -> dict[str, Any]:
    """Receive one JSON message of unknown length from ``source`` (matched probe, receive)."""
    pml = comm.pml
    found: list[Any] = []

    def probed() -> bool:
        message = pml.improbe(source, TAG, comm)
        if message is not None:
            found.append(message)
        return bool(found)

    comm.engine.wait_until(probed)
    data = bytearray(found[0].count)
    view = memoryview(data)
    request = pml.imrecv(BufferSpec(view, view.nbytes, BYTE, view), found[0])
    _wait(comm, request)
    return json.loads(data)


def _wait(comm: Any, request: Any) -> None:
    if not request.complete:
        comm.engine.wait_until(lambda: request.complete)
    if request.exception is not None:
        raise request.exception


def _wait_all(comm: Any, requests: list[Any]) -> None:
    for request in requests:
        _wait(comm, request)


def establish(
    comm: Any,
    create: Callable[[], tuple[Segment, dict[str, Any]]],
    attach: Callable[[SegmentDescriptor, dict[str, Any]], Segment],
    card: Any,
) -> tuple[Segment, dict[str, Any], list[Any]]:
    """Collective over ``comm``: the attached segment, rank 0's plan and every rank's card.

    ``create()`` (rank 0 only) makes the segment and returns it with the plan to publish;
    ``attach(descriptor, plan)`` (the others) maps it.  Raises :class:`HandshakeError` on every
    rank if any rank failed, with every rank's reason.
    """
    others = range(1, comm.size)
    if comm.rank != 0:
        plan = _recv(comm, 0)
        if "error" in plan:
            raise HandshakeError(plan["error"])
        segment = None
        try:
            segment = attach(SegmentDescriptor.from_dict(plan["descriptor"]), plan)
            answer: dict[str, Any] = {"card": card}
        except Exception as error:  # reported to rank 0, which tells everyone
            answer = {"error": f"rank {comm.rank}: {error}"}
        _wait(comm, _send(comm, 0, answer))
        verdict = _recv(comm, 0)
        if "error" in verdict:
            if segment is not None:
                with contextlib.suppress(Exception):
                    segment.detach()
            raise HandshakeError(verdict["error"])
        assert segment is not None
        return segment, plan, verdict["cards"]
    try:
        segment, plan = create()
    except Exception as error:
        reason = f"rank 0 could not create the segment: {error}"
        _wait_all(comm, [_send(comm, peer, {"error": reason}) for peer in others])
        raise HandshakeError(reason) from error
    try:
        plan = {**plan, "descriptor": segment.descriptor.to_dict()}
        _wait_all(comm, [_send(comm, peer, plan) for peer in others])
        answers = [_recv(comm, peer) for peer in others]
    finally:
        segment.unlink()  # everyone has attached (or given up): the name is no longer needed
    failures = [answer["error"] for answer in answers if "error" in answer]
    cards = [card] + [answer.get("card") for answer in answers]
    verdict = {"error": "; ".join(failures)} if failures else {"cards": cards}
    _wait_all(comm, [_send(comm, peer, verdict) for peer in others])
    if failures:
        with contextlib.suppress(Exception):
            segment.detach()
        raise HandshakeError(verdict["error"])
    return segment, plan, cards
