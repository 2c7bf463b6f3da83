"""The lowercase point-to-point methods' transport: objects through the codec, over the PML.

Objects are encoded by the instance's codec (``MPI.pickle``, :mod:`ompy.opal.codec`: pickle
protocol 5, large contiguous buffers out of band) and travel in the codec's framing with
:mod:`ompy.ompi.mca.pml.base.objects`.  What is particular to point-to-point lives here: the
send modes (a buffered send copies every message into the attached buffer), and the *channel*
of an object's out-of-band buffers, a private negative tag per message
(:func:`~.tags.pickle_channel`, which no user receive can take), so two objects in flight
between the same pair never exchange buffers, whatever order the receiver takes them in.

The common case, a small object in standard mode, is one message handed to the PML's
``send_view`` (no request when the transport takes it at once).
"""

from __future__ import annotations

from typing import Any

from ompy.opal.codec import STREAM_OOB_THRESHOLD, Encoded, frame

from ..datatype.buffer import BufferSpec
from ..datatype.predefined import BYTE
from ..mca.pml.base.objects import ObjectRecv, ObjectSend, post_object_recv, send_parts
from ..mca.pml.interface import PmlMessage, PmlRequest, SendMode
from .communicator import Communicator
from .tags import pickle_channel
from .transfers import BUFFERED, STANDARD, start_send


def byte_spec(view: memoryview) -> BufferSpec:
    """A BufferSpec of raw bytes."""
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return BufferSpec(view, view.nbytes, BYTE, view)


def send_object(
    comm: Communicator, obj: Any, dest: int, tag: int, mode: SendMode, *, call: str
) -> PmlRequest | ObjectSend | None:
    """Start a blocking send of ``obj``: None if it already left, else the request to wait on."""
    stream, buffers = comm.instance.codec.encode(obj)
    if mode is STANDARD and not buffers and len(stream) < STREAM_OOB_THRESHOLD:
        # one message: the common case
        return comm.pml.send_view(frame(stream, buffers, 0), dest, tag, comm)
    return _start(comm, Encoded(stream, buffers), dest, tag, mode, call=call)


def start_object_send(
    comm: Communicator, obj: Any, dest: int, tag: int, mode: SendMode, *, call: str
) -> PmlRequest | ObjectSend:
    """Encode ``obj`` and start sending it (``dest``, ``tag`` already checked)."""
    return _start(comm, Encoded.of(comm.instance.codec, obj), dest, tag, mode, call=call)


def _start(
    comm: Communicator, encoded: Encoded, dest: int, tag: int, mode: SendMode, *, call: str
) -> PmlRequest | ObjectSend:
    channel = 0
    if encoded.outgoing:
        with comm.engine.lock:  # the channel counter (THREAD_MULTIPLE: two threads send objects)
            counter = comm.channels.get(dest, 0)
            comm.channels[dest] = counter + 1
        channel = pickle_channel(counter)
        encoded.set_channel(channel)
    buffer_mode = BUFFERED if mode is BUFFERED else STANDARD

    def start(view: memoryview, dest: int, tag: int, first: bool) -> PmlRequest:
        return start_send(
            comm, byte_spec(view), dest, tag, mode if first else buffer_mode, call=call
        )

    return send_parts(encoded, start, dest, tag, channel)


def receive_object(
    comm: Communicator, source: int, tag: int, message: PmlMessage | None = None
) -> ObjectRecv:
    """Post the receive of an object (or receive the one a matched probe took)."""
    return post_object_recv(comm.pml, comm, comm.instance.codec, comm.engine, source, tag, message)
