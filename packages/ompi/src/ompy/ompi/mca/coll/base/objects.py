"""Python objects between the members of a collective: the object operations' transport.

The object operations (``bcast_object``, ``allreduce_object``, ...) move objects point to
point on the collective's tag, encoded by the instance's codec (``comm.instance.codec``, that
is ``MPI.pickle``) in the codec's one framing, through
:mod:`ompy.ompi.mca.pml.base.objects`: a stream message, then any out-of-band buffer on the
same tag (at most one object goes from one rank to another in one collective call, and MPI's
non-overtaking order keeps a sender's messages in sequence).  The receive is the PML's sized
receive: a small object costs one message and no probe.

Most steps of the algorithms move one object each way, and their cost is per-call overhead, so
the common path is flat: a small object is one ``send_view`` (no request at all when the
transport takes it at once) and one sized receive waited on directly::

    stream = recv_stream(comm, peer, tag)       # posted first: in matching order
    sent = send_object(comm, obj, peer, tag)    # None when it already left
    theirs = finish_recv(comm, stream)          # waits; receives any buffers; decodes
    wait(comm, sent)

An object for several peers is encoded once (:func:`encode_object`, :func:`send_encoded`);
several objects received together are :class:`~ompy.ompi.mca.pml.base.objects.ObjectRecv`
requests (:func:`recv_object`, :func:`wait_all`), whose buffers are posted as each stream
arrives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ompy.opal.codec import STREAM_OOB_THRESHOLD, Encoded, frame

from ...pml.base.objects import (
    ObjectRecv,
    ObjectSend,
    finish_object_recv,
    post_object_recv,
    send_parts,
)
from ...pml.interface import PmlRequest, SendMode, SizedRecvRequest
from ..interface import CollComm

_STANDARD = SendMode.STANDARD

#: What starting a send gives: a request to wait on, or None when the message already left.
Sent = PmlRequest | ObjectSend | None


def encode_object(comm: CollComm, obj: Any, tag: int) -> Encoded:
    """``obj`` encoded by ``comm``'s codec, its buffers announced on ``tag``."""
    return Encoded.of(comm.instance.codec, obj, tag)


def send_object(comm: CollComm, obj: Any, dest: int, tag: int) -> Sent:
    """Encode ``obj`` and start sending it to ``dest`` on ``tag`` (standard mode)."""
    stream, buffers = comm.instance.codec.encode(obj)
    if not buffers and len(stream) < STREAM_OOB_THRESHOLD:  # one message: the common case
        return comm.pml.send_view(frame(stream, buffers, tag), dest, tag, comm)
    return send_encoded(comm, Encoded(stream, buffers, tag), dest, tag)


def send_encoded(comm: CollComm, encoded: Encoded, dest: int, tag: int) -> Sent:
    """Start sending an encoded object to ``dest`` on ``tag`` (standard mode)."""
    pml = comm.pml
    if not encoded.outgoing:
        return pml.send_view(encoded.view, dest, tag, comm)

    def start(view: memoryview, dest: int, tag: int, _first: bool) -> PmlRequest:
        return pml.isend_view(view, dest, tag, comm, _STANDARD)

    return send_parts(encoded, start, dest, tag, tag)


def recv_stream(comm: CollComm, source: int, tag: int) -> SizedRecvRequest:
    """Post the receive of an object's stream message from ``source`` (for :func:`finish_recv`)."""
    return comm.pml.irecv_view(None, source, tag, comm)


def finish_recv(comm: CollComm, stream: SizedRecvRequest) -> Any:
    """The object whose stream ``stream`` receives: waits for it and for its buffers."""
    return finish_object_recv(comm.pml, comm, comm.instance.codec, comm.engine, stream)


def receive(comm: CollComm, source: int, tag: int) -> Any:
    """Receive one object from ``source`` on ``tag`` (blocking)."""
    return finish_recv(comm, recv_stream(comm, source, tag))


def recv_object(comm: CollComm, source: int, tag: int) -> ObjectRecv:
    """Post the receive of an object from ``source`` on ``tag``; ``.result`` once complete.

    For several receives in flight together: each one's buffers are posted as soon as its
    stream arrives, whichever request the program waits for.
    """
    return post_object_recv(comm.pml, comm, comm.instance.codec, comm.engine, source, tag)


def wait(comm: CollComm, request: Sent) -> None:
    """Progress until ``request`` (a started send, or None) completes; raise its failure."""
    if request is None:
        return
    if not request.complete:
        comm.engine.wait_for(request)
    if request.exception is not None:
        raise request.exception


def wait_all(comm: CollComm, requests: Sequence[Sent | ObjectRecv]) -> None:
    """Progress until every request completes; raise the first failure (None: already done)."""
    engine = comm.engine
    for request in requests:
        if request is not None and not request.complete:
            engine.wait_for(request)
    for request in requests:
        if request is not None and request.exception is not None:
            raise request.exception


def copy_object(comm: CollComm, obj: Any) -> Any:
    """A copy of ``obj`` made by the codec: what a member gets of its own contribution."""
    codec = comm.instance.codec
    return codec.loads(codec.dumps(obj))  # in-band: the copy shares no memory with ``obj``
