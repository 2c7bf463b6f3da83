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

A member whose part fails (its object does not pickle, a peer's does not unpickle, the
reduction's function raises) must still send what its peers wait for, or they wait forever.
:class:`Outcome` plays such a member's part to the end with a :class:`Failure` in place of the
value it could not produce; every member then raises: the failing one its own exception, the
others an ``MPI.Exception`` naming the failing rank.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ompy.opal.codec import STREAM_OOB_THRESHOLD, Encoded, frame

from ....errors import ERR_OTHER, PeerFailedError
from ....errors import Exception as MPIException
from ...pml.base.objects import (
    ObjectRecv,
    ObjectSend,
    finish_object_recv,
    post_object_recv,
    send_parts,
)
from ...pml.interface import PmlRequest, SendMode, SizedRecvRequest
from ..interface import CollComm, Items

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


@attrs.frozen
class Failure:
    """What a member sends in place of a value it could not produce."""

    rank: int
    reason: str

    @classmethod
    def of(cls, comm: CollComm, error: BaseException) -> Failure:
        return cls(comm.rank, f"{type(error).__name__}: {error}")


class Outcome:
    """One member's part in an object collective, played to the end even after a failure.

    Its methods are the transport's and the reduction's steps; a step that raises (anything
    but an ``MPI.Exception``, which means the transport itself failed and is raised at once)
    yields a :class:`Failure` that travels on in place of the value, and :meth:`result` raises
    at the end of the call, when every message this member owes has been sent.
    """

    __slots__ = ("call", "comm", "error")

    def __init__(self, comm: CollComm, call: str) -> None:
        self.comm = comm
        self.call = call
        self.error: Exception | None = None

    def _failed(self, error: Exception) -> Failure:
        if self.error is None:
            self.error = error
        return Failure.of(self.comm, error)

    def items(self, given: Items, count: int) -> Sequence[Any]:
        """The member's objects, one per peer; in place of a sequence, the error its check
        raised (:data:`~ompy.ompi.mca.coll.interface.Items`): a :class:`Failure` for every
        peer then, so that each learns of it instead of waiting, and :meth:`result` raises
        that error once this member's part is done."""
        if isinstance(given, Exception):
            return [self._failed(given)] * count
        return given

    def send(self, obj: Any, dest: int, tag: int) -> Sent:
        """:func:`send_object`, or a :class:`Failure` sent when ``obj`` cannot be encoded."""
        try:
            return send_object(self.comm, obj, dest, tag)
        except MPIException:
            raise
        except Exception as error:
            return send_object(self.comm, self._failed(error), dest, tag)

    def encode(self, obj: Any, tag: int) -> Encoded:
        """:func:`encode_object`, or a :class:`Failure` encoded when ``obj`` cannot be."""
        try:
            return encode_object(self.comm, obj, tag)
        except Exception as error:
            return encode_object(self.comm, self._failed(error), tag)

    def receive(self, source: int, tag: int) -> Any:
        """:func:`receive`, or a :class:`Failure` when the object arrived but does not decode."""
        try:
            return receive(self.comm, source, tag)
        except MPIException:
            raise
        except Exception as error:
            return self._failed(error)

    def exchange(self, obj: Any, peer: int, tag: int) -> Any:
        """Send ``obj`` to ``peer`` and receive its object, both in flight together."""
        comm = self.comm
        incoming = recv_stream(comm, peer, tag)
        outgoing = self.send(obj, peer, tag)
        try:
            theirs = finish_recv(comm, incoming)
        except MPIException:
            raise
        except Exception as error:
            theirs = self._failed(error)
        finally:  # the send completes whatever the receive did
            wait(comm, outgoing)
        return theirs

    def values(self, requests: Sequence[ObjectRecv]) -> list[Any]:
        """The objects of several receives, once all are complete (one that does not decode
        is a failure: the others are still received)."""
        engine = self.comm.engine
        for request in requests:
            if not request.complete:
                engine.wait_for(request)
        objects = []
        for request in requests:
            error = request.exception
            if error is None:
                objects.append(request.result)
            elif isinstance(error, MPIException) or not isinstance(error, Exception):
                raise error
            else:
                objects.append(self._failed(error))
        return objects

    def combine(self, op: Callable[[Any, Any], Any], left: Any, right: Any) -> Any:
        """``op(left, right)``; a failure on either side, or in ``op``, gives a failure."""
        if type(left) is Failure:
            return left
        if type(right) is Failure:
            return right
        try:
            return op(left, right)
        except Exception as error:
            return self._failed(error)

    def copy(self, obj: Any) -> Any:
        """:func:`copy_object` (what a member keeps of its own object), or a failure."""
        if type(obj) is Failure:
            return obj
        try:
            return copy_object(self.comm, obj)
        except Exception as error:
            return self._failed(error)

    def result(self, value: Any) -> Any:
        """``value``, once every step is done; raise this member's failure or a peer's."""
        if self.error is not None:
            raise self.error
        if type(value) is Failure:
            raise _peer_failed(self.call, value)
        return value

    def results(self, values: list[Any]) -> list[Any]:
        """:meth:`result` for a list of every member's value (gathers)."""
        if self.error is not None:
            raise self.error
        for value in values:
            if type(value) is Failure:
                raise _peer_failed(self.call, value)
        return values


def _peer_failed(call: str, failure: Failure) -> PeerFailedError:
    return PeerFailedError(
        ERR_OTHER,
        f"{call}: rank {failure.rank} failed in this collective ({failure.reason}); "
        "its part was not computed",
    )
