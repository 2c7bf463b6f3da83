"""Python objects between the members of a collective: the object operations' transport.

The object operations (``bcast_object``, ``allreduce_object``, ...) move objects point to
point on the collective's tag, encoded by the instance's codec (``comm.instance.codec``, that
is ``MPI.pickle``) in the codec's one framing, through
:mod:`ompy.ompi.mca.pml.base.objects`: a stream message, then any out-of-band buffer on the
same tag (at most one object goes from one rank to another in one collective call, and MPI's
non-overtaking order keeps a sender's messages in sequence).  The receive is the PML's sized
receive: a small object costs one message and no probe::

    encoded = encode_object(comm, obj, tag)     # once, however many peers get it
    request = send_object(comm, encoded, dest, tag)
    incoming = recv_object(comm, source, tag)
    wait_all(comm, [request, incoming])
    obj = incoming.result
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ompy.opal.codec import Encoded

from ...pml.base.objects import ObjectRecv, ObjectSend, post_object_recv, send_parts
from ...pml.interface import PmlRequest, SendMode
from ..interface import CollComm

_STANDARD = SendMode.STANDARD


def encode_object(comm: CollComm, obj: Any, tag: int) -> Encoded:
    """``obj`` encoded by ``comm``'s codec, its buffers announced on ``tag``."""
    return Encoded.of(comm.instance.codec, obj, tag)


def send_object(comm: CollComm, encoded: Encoded, dest: int, tag: int) -> PmlRequest | ObjectSend:
    """Start sending an encoded object to ``dest`` on ``tag`` (standard mode)."""
    pml = comm.pml

    def start(view: memoryview, dest: int, tag: int, _first: bool) -> PmlRequest:
        return pml.isend_view(view, dest, tag, comm, _STANDARD)

    return send_parts(encoded, start, dest, tag, tag)


def recv_object(comm: CollComm, source: int, tag: int) -> ObjectRecv:
    """Post the receive of an object from ``source`` on ``tag``; ``.result`` once complete."""
    return post_object_recv(comm.pml, comm, comm.instance.codec, comm.engine, source, tag)


def wait_all(comm: CollComm, requests: Sequence[PmlRequest | ObjectSend | ObjectRecv]) -> None:
    """Progress until every request completes; raise the first failure."""
    if not all(request.complete for request in requests):
        comm.engine.wait_until(lambda: all(request.complete for request in requests))
    for request in requests:
        if request.exception is not None:
            raise request.exception


def receive(comm: CollComm, source: int, tag: int) -> Any:
    """Receive one object from ``source`` on ``tag`` (blocking)."""
    incoming = recv_object(comm, source, tag)
    wait_all(comm, [incoming])
    return incoming.result


def copy_object(comm: CollComm, obj: Any) -> Any:
    """A copy of ``obj`` made by the codec: what a member gets of its own contribution."""
    codec = comm.instance.codec
    return codec.loads(codec.dumps(obj))  # in-band: the copy shares no memory with ``obj``
