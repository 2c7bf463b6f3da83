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
from ..mca.pml.interface import PmlMessage
from ..status import Status
from .communicator import Communicator
from .pickled import receive_object
from .request import Request
from .transfers import fill_status, proc_null_request, raise_if_failed, wait


class _NoProc:
    """What ``MESSAGE_NO_PROC`` refers to: the message of a probe with source ``PROC_NULL``."""

    __slots__ = ()


_NO_PROC = _NoProc()
#: What a handle refers to: a message the PML took out of matching, NO_PROC, or nothing (NULL).
_Referent = PmlMessage | _NoProc | None


class Message(Handle, referent="_message"):
    """Matched message."""

    __slots__ = ("_comm", "_message")

    _message: _Referent
    _comm: Communicator | None

    @classmethod
    def _of(cls, message: PmlMessage | _NoProc, comm: Communicator | None) -> Message:
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
        message = self._message
        if message is None:
            return "<Message MESSAGE_NULL>"
        if isinstance(message, _NoProc):
            return "<Message MESSAGE_NO_PROC>"
        return f"<Message source={message.source} tag={message.tag}>"

    def _take(self, call: str) -> tuple[PmlMessage, Communicator] | None:
        """The message and its communicator, None for MESSAGE_NO_PROC.

        The handle becomes MESSAGE_NULL (MESSAGE_NO_PROC stays what it is).
        """
        message, comm = self._message, self._comm
        if isinstance(message, _NoProc):
            return None
        if message is None or comm is None:
            raise MPIException(
                ERR_REQUEST,
                f"Message.{call}: the message is MESSAGE_NULL (already received, or never "
                "probed); get one from Comm.Mprobe or Comm.Improbe",
            )
        self._message = None
        return message, comm

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

    # The lowercase probes are the uppercase ones: the message they match serves ``recv`` and
    # ``Recv`` alike (as ``Comm.mprobe`` is ``Comm.Mprobe``).
    probe = Probe
    iprobe = Iprobe

    # -- receives -----------------------------------------------------------------------------

    def Recv(self, buf: Any, status: Status | None = None) -> None:
        """Blocking receive of matched message."""
        taken = self._take("Recv")
        if taken is None:
            fill_status(status, proc_null_request())
            return
        message, comm = taken
        request = comm.pml.imrecv(parse_buffer(buf, readonly=False), message)
        wait(comm, request)
        fill_status(status, request)
        raise_if_failed(request)

    def Irecv(self, buf: Any) -> Request:
        """Nonblocking receive of matched message."""
        taken = self._take("Irecv")
        if taken is None:
            return Request._of(proc_null_request(), None)
        message, comm = taken
        return Request._of(comm.pml.imrecv(parse_buffer(buf, readonly=False), message), comm)

    def recv(self, status: Status | None = None) -> Any:
        """Blocking receive of matched message; returns the object."""
        taken = self._take("recv")
        if taken is None:
            fill_status(status, proc_null_request())
            return None
        message, comm = taken
        request = receive_object(comm, message.source, message.tag, message)
        wait(comm, request)
        fill_status(status, request)
        raise_if_failed(request)
        return request.result

    def irecv(self) -> Request:
        """Nonblocking receive of matched message; ``wait()`` returns the object."""
        taken = self._take("irecv")
        if taken is None:
            return Request._of(proc_null_request(), None)
        message, comm = taken
        return Request._of(receive_object(comm, message.source, message.tag, message), comm)


#: Null message handle.
MESSAGE_NULL = predefine(Message(), "MESSAGE_NULL", 0)
#: The message of a probe with source PROC_NULL.
MESSAGE_NO_PROC = predefine(Message._of(_NO_PROC, None), "MESSAGE_NO_PROC", 1)
