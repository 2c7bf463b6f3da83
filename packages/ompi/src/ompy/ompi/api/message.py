"""``MPI.Message``: a message taken out of matching by a matched probe, to be received later.

``Comm.Mprobe``/``Improbe`` (and ``Message.Probe``/``Iprobe``) hand back a message that no other
receive can match any more; ``Recv``/``Irecv`` (uppercase, into a buffer) or ``recv``/``irecv``
(lowercase, a pickled object) receive exactly it.  A probe with source ``PROC_NULL`` gives
``MESSAGE_NO_PROC``, whose receive completes at once with the ``PROC_NULL`` status.  A received
message handle becomes ``MESSAGE_NULL``.
"""

from __future__ import annotations

from typing import Any

from ..constants import ANY_SOURCE, ANY_TAG
from ..datatype.buffer import parse_buffer
from ..errors import ERR_REQUEST
from ..errors import Exception as MPIException
from ..handle import Handle, predefine
from ..status import Status
from .communicator import Communicator
from .ops import fill_status, proc_null_request, raise_if_failed, wait
from .pickled import PickledRecv
from .request import Request

_NO_PROC = object()


class Message(Handle, referent="_message"):
    """Matched message."""

    __slots__ = ("_comm", "_message")

    _message: Any
    _comm: Communicator | None

    @classmethod
    def _of(cls, message: Any, comm: Communicator | None) -> Message:
        handle = object.__new__(cls)  # not Handle.__new__: every matched probe makes one
        handle._message = message
        handle._comm = comm
        return handle

    __hash__ = None  # type: ignore[assignment]  # a handle changes when it is received

    def _instance_for_handles(self) -> Any:
        comm = self._comm
        return comm.instance if comm is not None else super()._instance_for_handles()

    def _free(self) -> None:
        """``free()`` leaves a matched message alone (mpi4py's meaning): receive it instead."""

    def __repr__(self) -> str:
        if self._message is None:
            return "<Message MESSAGE_NULL>"
        if self._message is _NO_PROC:
            return "<Message MESSAGE_NO_PROC>"
        return f"<Message source={self._message.source} tag={self._message.tag}>"

    def _take(self, call: str) -> tuple[Any, Communicator | None]:
        """The message and its communicator; the handle becomes MESSAGE_NULL (unless NO_PROC)."""
        message = self._message
        if message is None:
            raise MPIException(
                ERR_REQUEST,
                f"Message.{call}: the message is MESSAGE_NULL (already received, or never "
                "probed); get one from Comm.Mprobe or Comm.Improbe",
            )
        if message is not _NO_PROC:
            self._message = None
        return message, self._comm

    # -- probes -------------------------------------------------------------------------------

    @classmethod
    def Probe(
        cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Message:
        """Blocking test for a matched message."""
        return comm.Mprobe(source, tag, status)

    @classmethod
    def Iprobe(
        cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Message | None:
        """Nonblocking test for a matched message."""
        return comm.Improbe(source, tag, status)

    @classmethod
    def probe(
        cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Message:
        """Blocking test for a matched message."""
        return comm.mprobe(source, tag, status)

    @classmethod
    def iprobe(
        cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Message | None:
        """Nonblocking test for a matched message."""
        return comm.improbe(source, tag, status)

    # -- receives -----------------------------------------------------------------------------

    def Recv(self, buf: Any, status: Status | None = None) -> None:
        """Blocking receive of matched message."""
        message, comm = self._take("Recv")
        if message is _NO_PROC:
            fill_status(status, proc_null_request())
            return
        request = comm.pml.imrecv(parse_buffer(buf, readonly=False), message)
        wait(comm, request)
        fill_status(status, request)
        raise_if_failed(request)

    def Irecv(self, buf: Any) -> Request:
        """Nonblocking receive of matched message."""
        message, comm = self._take("Irecv")
        if message is _NO_PROC:
            return Request._of(proc_null_request(), comm)
        return Request._of(comm.pml.imrecv(parse_buffer(buf, readonly=False), message), comm)

    def recv(self, status: Status | None = None) -> Any:
        """Blocking receive of matched message; returns the object."""
        message, comm = self._take("recv")
        if message is _NO_PROC:
            fill_status(status, proc_null_request())
            return None
        request = PickledRecv(comm, message.source, message.tag, message)
        wait(comm, request)
        fill_status(status, request)
        raise_if_failed(request)
        return request.result

    def irecv(self) -> Request:
        """Nonblocking receive of matched message; ``wait()`` returns the object."""
        message, comm = self._take("irecv")
        if message is _NO_PROC:
            return Request._of(proc_null_request(), comm)
        return Request._of(PickledRecv(comm, message.source, message.tag, message), comm)


#: Null message handle.
MESSAGE_NULL = predefine(Message(), "MESSAGE_NULL", 0)
#: The message of a probe with source PROC_NULL.
MESSAGE_NO_PROC = predefine(Message._of(_NO_PROC, None), "MESSAGE_NO_PROC", 1)
