"""Point-to-point methods of ``Comm``: uppercase (buffers) and lowercase (pickled objects).

Kept apart from communicator management so that each module has one job.  The hot calls
(``Send``, ``Recv``, ``Isend``, ``Irecv``) test the common case inline — an int rank in range,
an int tag in range — and fall back to :mod:`.checks` for everything else, which raises with
MPI's error class and says what was wrong.
"""

from __future__ import annotations

from typing import Any, Literal

from ..constants import ANY_SOURCE, ANY_TAG, PROC_NULL
from ..datatype.buffer import parse_buffer
from ..mca.pml.base.objects import ObjectRecv, object_of_stream
from ..mca.pml.interface import PmlMessage, ProbeStatus, SendMode
from ..status import Status
from .checks import dest_rank, recv_tag, send_tag, source_rank
from .communicator import Communicator
from .families import member
from .message import MESSAGE_NO_PROC, Message
from .pickled import receive_object, send_object, start_object_send
from .plain_buffers import flat_view
from .request import Prequest, Request
from .transfers import (
    BUFFERED,
    READY,
    STANDARD,
    SYNCHRONOUS,
    fill_probe,
    fill_status,
    proc_null_request,
    raise_if_failed,
    start_send,
    wait,
)


class PointToPoint:
    """The point-to-point half of :class:`~.comm.Comm` (``_live`` gives the communicator)."""

    __slots__ = ()
    _c: Communicator | None  # provided by Comm

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    # -- checked arguments -----------------------------------------------------------------------

    def _send_args(self, call: str, dest: Any, tag: Any) -> tuple[Communicator, int, int]:
        c = self._live(call)
        if type(dest) is not int or not 0 <= dest < c.remote_size:
            dest = dest_rank(dest, c.remote_size, call)
        if type(tag) is not int or not 0 <= tag <= c.tag_ub:
            tag = send_tag(tag, c.tag_ub, call)
        return c, dest, tag

    def _recv_args(self, call: str, source: Any, tag: Any) -> tuple[Communicator, int, int]:
        c = self._live(call)
        if type(source) is not int or not (0 <= source < c.remote_size or source == ANY_SOURCE):
            source = source_rank(source, c.remote_size, call)
        if type(tag) is not int or not (0 <= tag <= c.tag_ub or tag == ANY_TAG):
            tag = recv_tag(tag, c.tag_ub, call)
        return c, source, tag

    # -- the families of sends: one definition each, a method per mode (see .families) ------------

    def _start_send(self, call: str, mode: SendMode, buf: Any, dest: int, tag: int = 0) -> Request:
        c, dest, tag = self._send_args(call, dest, tag)
        if dest == PROC_NULL:
            return Request._of(proc_null_request(), c)
        return Request._of(start_send(c, parse_buffer(buf), dest, tag, mode, call=call), c)

    def _blocking_send(self, call: str, mode: SendMode, buf: Any, dest: int, tag: int = 0) -> None:
        c, dest, tag = self._send_args(call, dest, tag)
        if dest == PROC_NULL:
            return
        request = start_send(c, parse_buffer(buf), dest, tag, mode, call=call)
        if not request.complete:
            c.engine.wait_until(lambda: request.complete)
        if request.exception is not None:
            raise request.exception

    # -- blocking buffer sends and receives ------------------------------------------------------

    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:
        """Blocking send."""
        # _send_args, inlined: every call saved is a fraction of a microsecond of latency.
        c = self._c
        if c is None or c.freed:
            c = self._live("Comm.Send")
        if type(dest) is not int or not 0 <= dest < c.remote_size:
            dest = dest_rank(dest, c.remote_size, "Comm.Send")
        if type(tag) is not int or not 0 <= tag <= c.tag_ub:
            tag = send_tag(tag, c.tag_ub, "Comm.Send")
        if dest == PROC_NULL:
            return
        pml = c.pml
        view = flat_view(buf, True) if pml.raw_views else None
        if view is None:
            request = pml.isend(parse_buffer(buf), dest, tag, c, STANDARD)
        else:
            sent = pml.send_view(view, dest, tag, c)
            if sent is None:
                return  # it already left: no request was made
            request = sent
        if not request.complete:
            c.engine.wait_for(request)
        if request.exception is not None:
            raise request.exception

    def Recv(
        self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> None:
        """Blocking receive."""
        c = self._c  # _recv_args, inlined as in Send
        if c is None or c.freed:
            c = self._live("Comm.Recv")
        if type(source) is not int or not (0 <= source < c.remote_size or source == ANY_SOURCE):
            source = source_rank(source, c.remote_size, "Comm.Recv")
        if type(tag) is not int or not (0 <= tag <= c.tag_ub or tag == ANY_TAG):
            tag = recv_tag(tag, c.tag_ub, "Comm.Recv")
        if source == PROC_NULL:
            fill_status(status, proc_null_request())
            return
        pml = c.pml
        view = flat_view(buf, False) if pml.raw_views else None
        if view is None:
            request = pml.irecv(parse_buffer(buf, readonly=False), source, tag, c)
        else:
            if source >= 0:  # one source: the PML may receive it inline (its fast path)
                got = pml.recv_now(view, source, tag, c)
                if got is not None:
                    if status is not None:
                        fill_probe(status, source, got[0], got[1])
                    return
            request = pml.irecv_view(view, source, tag, c)
        if not request.complete:
            c.engine.wait_for(request)
        if status is not None:
            fill_status(status, request)
        if request.exception is not None:
            raise request.exception

    Bsend = member(_blocking_send, "Comm.Bsend", BUFFERED, "Blocking send in buffered mode.")
    Ssend = member(_blocking_send, "Comm.Ssend", SYNCHRONOUS, "Blocking send in synchronous mode.")
    Rsend = member(_blocking_send, "Comm.Rsend", READY, "Blocking send in ready mode.")

    # -- nonblocking -----------------------------------------------------------------------------

    def Isend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        """Nonblocking send."""
        c, dest, tag = self._send_args("Comm.Isend", dest, tag)
        if dest == PROC_NULL:
            return Request._of(proc_null_request(), c)
        return Request._of(c.pml.isend(parse_buffer(buf), dest, tag, c, STANDARD), c)

    Ibsend = member(_start_send, "Comm.Ibsend", BUFFERED, "Nonblocking send in buffered mode.")
    Issend = member(
        _start_send, "Comm.Issend", SYNCHRONOUS, "Nonblocking send in synchronous mode."
    )
    Irsend = member(_start_send, "Comm.Irsend", READY, "Nonblocking send in ready mode.")

    def Irecv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        """Nonblocking receive."""
        c, source, tag = self._recv_args("Comm.Irecv", source, tag)
        if source == PROC_NULL:
            return Request._of(proc_null_request(), c)
        return Request._of(c.pml.irecv(parse_buffer(buf, readonly=False), source, tag, c), c)

    # -- send-receive ----------------------------------------------------------------------------

    def Sendrecv(  # noqa: PLR0917 (mpi4py's signature)
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> None:
        """Send and receive a message."""
        # The send message is read before the receive is posted: a bad send buffer must not
        # leave a receive behind (it would take a later message, and keep its buffer forever).
        c, dest, sendtag = self._send_args("Comm.Sendrecv", dest, sendtag)
        spec = None if dest == PROC_NULL else parse_buffer(sendbuf)
        receive = self.Irecv(recvbuf, source, recvtag)
        if spec is not None:
            send = c.pml.isend(spec, dest, sendtag, c, STANDARD)
            wait(c, send)
            raise_if_failed(send)
        receive.Wait(status)

    def Sendrecv_replace(  # noqa: PLR0917 (mpi4py's signature)
        self,
        buf: Any,
        dest: int,
        sendtag: int = 0,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> None:
        """Send and receive a message, in place: the received data replaces the sent data."""
        c, dest, sendtag = self._send_args("Comm.Sendrecv_replace", dest, sendtag)
        if dest == PROC_NULL and source == PROC_NULL:  # nothing moves: the buffer is not read
            fill_status(status, proc_null_request())
            return
        spec = parse_buffer(buf, readonly=False)
        # The receive overwrites the buffer: send a packed copy (a spec of its packed stream).
        outgoing = memoryview(bytearray(spec.nbytes))
        outgoing[:] = spec.packed()
        send_spec = type(spec)(outgoing, spec.count, spec.datatype, outgoing)
        receive = self.Irecv(buf, source, recvtag)
        if dest != PROC_NULL:
            send = c.pml.isend(send_spec, dest, sendtag, c, STANDARD)
            wait(c, send)
            raise_if_failed(send)
        receive.Wait(status)

    # -- probes ----------------------------------------------------------------------------------

    def Probe(
        self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Literal[True]:
        """Blocking test for a message."""
        c, source, tag = self._recv_args("Comm.Probe", source, tag)
        if source == PROC_NULL:
            fill_status(status, proc_null_request())
            return True
        found: list[ProbeStatus] = []

        def probed() -> bool:
            result = c.pml.iprobe(source, tag, c)
            if result is None:
                return False
            found.append(result)
            return True

        c.engine.wait_until(probed)
        fill_probe(status, found[0].source, found[0].tag, found[0].count)
        return True

    def Iprobe(
        self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> bool:
        """Nonblocking test for a message."""
        c, source, tag = self._recv_args("Comm.Iprobe", source, tag)
        if source == PROC_NULL:
            fill_status(status, proc_null_request())
            return True
        result = c.pml.iprobe(source, tag, c)
        if result is None:
            c.engine.progress()
            result = c.pml.iprobe(source, tag, c)
            if result is None:
                return False
        fill_probe(status, result.source, result.tag, result.count)
        return True

    def Mprobe(
        self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Message:
        """Blocking test for a matched message."""
        c, source, tag = self._recv_args("Comm.Mprobe", source, tag)
        if source == PROC_NULL:
            fill_status(status, proc_null_request())
            return Message(MESSAGE_NO_PROC)
        found: list[PmlMessage] = []

        def probed() -> bool:
            message = c.pml.improbe(source, tag, c)
            if message is None:
                return False
            found.append(message)
            return True

        c.engine.wait_until(probed)
        fill_probe(status, found[0].source, found[0].tag, found[0].count)
        return Message._of(found[0], c)

    def Improbe(
        self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Status | None = None
    ) -> Message | None:
        """Nonblocking test for a matched message."""
        c, source, tag = self._recv_args("Comm.Improbe", source, tag)
        if source == PROC_NULL:
            fill_status(status, proc_null_request())
            return Message(MESSAGE_NO_PROC)
        message = c.pml.improbe(source, tag, c)
        if message is None:
            c.engine.progress()
            message = c.pml.improbe(source, tag, c)
            if message is None:
                return None
        fill_probe(status, message.source, message.tag, message.count)
        return Message._of(message, c)

    # -- persistent ------------------------------------------------------------------------------

    def _send_init(self, call: str, mode: SendMode, buf: Any, dest: int, tag: int = 0) -> Prequest:
        c, dest, tag = self._send_args(call, dest, tag)
        if dest == PROC_NULL:
            return Prequest._persistent(proc_null_request, c)
        spec = parse_buffer(buf)
        return Prequest._persistent(lambda: start_send(c, spec, dest, tag, mode, call=call), c)

    Send_init = member(
        _send_init, "Comm.Send_init", STANDARD, "Create a persistent request for a standard send."
    )
    Bsend_init = member(
        _send_init, "Comm.Bsend_init", BUFFERED, "Persistent request for a send in buffered mode."
    )
    Ssend_init = member(
        _send_init,
        "Comm.Ssend_init",
        SYNCHRONOUS,
        "Create a persistent request for a synchronous send.",
    )
    Rsend_init = member(
        _send_init, "Comm.Rsend_init", READY, "Create a persistent request for a ready send."
    )

    def Recv_init(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Prequest:
        """Create a persistent request for a receive."""
        c, source, tag = self._recv_args("Comm.Recv_init", source, tag)
        if source == PROC_NULL:
            return Prequest._persistent(proc_null_request, c)
        spec = parse_buffer(buf, readonly=False)
        return Prequest._persistent(lambda: c.pml.irecv(spec, source, tag, c), c)

    # -- lowercase: pickled objects --------------------------------------------------------------

    def _object_send(self, call: str, mode: SendMode, obj: Any, dest: int, tag: int = 0) -> None:
        c, dest, tag = self._send_args(call, dest, tag)
        if dest == PROC_NULL:
            return
        request = send_object(c, obj, dest, tag, mode, call=call)
        if request is None:
            return  # it already left
        if not request.complete:
            c.engine.wait_for(request)
        raise_if_failed(request)

    def _object_isend(
        self, call: str, mode: SendMode, obj: Any, dest: int, tag: int = 0
    ) -> Request:
        c, dest, tag = self._send_args(call, dest, tag)
        if dest == PROC_NULL:
            return Request._of(proc_null_request(), c)
        return Request._of(start_object_send(c, obj, dest, tag, mode, call=call), c)

    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        """Send in standard mode."""
        c = self._c  # _send_args, inlined as in Send
        if c is None or c.freed:
            c = self._live("Comm.send")
        if type(dest) is not int or not 0 <= dest < c.remote_size:
            dest = dest_rank(dest, c.remote_size, "Comm.send")
        if type(tag) is not int or not 0 <= tag <= c.tag_ub:
            tag = send_tag(tag, c.tag_ub, "Comm.send")
        if dest == PROC_NULL:
            return
        request = send_object(c, obj, dest, tag, STANDARD, call="Comm.send")
        if request is None:
            return  # it already left
        if not request.complete:
            c.engine.wait_for(request)
        raise_if_failed(request)

    bsend = member(_object_send, "Comm.bsend", BUFFERED, "Send in buffered mode.")
    ssend = member(_object_send, "Comm.ssend", SYNCHRONOUS, "Send in synchronous mode.")
    isend = member(_object_isend, "Comm.isend", STANDARD, "Nonblocking send.")
    ibsend = member(_object_isend, "Comm.ibsend", BUFFERED, "Nonblocking send in buffered mode.")
    issend = member(
        _object_isend, "Comm.issend", SYNCHRONOUS, "Nonblocking send in synchronous mode."
    )

    def recv(
        self,
        buf: Any = None,
        source: int = ANY_SOURCE,
        tag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Any:
        """Receive (``buf`` is accepted for mpi4py compatibility; the message sizes the buffer)."""
        c = self._c  # _recv_args, inlined as in Recv
        if c is None or c.freed:
            c = self._live("Comm.recv")
        if type(source) is not int or not (0 <= source < c.remote_size or source == ANY_SOURCE):
            source = source_rank(source, c.remote_size, "Comm.recv")
        if type(tag) is not int or not (0 <= tag <= c.tag_ub or tag == ANY_TAG):
            tag = recv_tag(tag, c.tag_ub, "Comm.recv")
        if source == PROC_NULL:
            fill_status(status, proc_null_request())
            return None
        if source >= 0:  # one source: the PML may receive the stream inline (its fast path)
            got = c.pml.recv_now(None, source, tag, c)
            if got is not None:
                if status is not None:
                    fill_probe(status, source, got[0], got[1])
                return object_of_stream(c.pml, c, c.instance.codec, c.engine, got[2], source)
        engine = c.engine
        if engine.threaded:  # post_object_recv, inlined: this is the path of every recv
            with engine.lock:
                request = ObjectRecv(c.pml, c, c.instance.codec, source, tag)
        else:
            request = ObjectRecv(c.pml, c, c.instance.codec, source, tag)
        if not request.complete:
            engine.wait_for(request)
        if status is not None:
            fill_status(status, request)
        if request.exception is not None:
            raise request.exception
        return request.result

    def irecv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        """Nonblocking receive; ``wait()`` returns the object."""
        c, source, tag = self._recv_args("Comm.irecv", source, tag)
        if source == PROC_NULL:
            return Request._of(proc_null_request(), c)
        return Request._of(receive_object(c, source, tag), c)

    def sendrecv(  # noqa: PLR0917 (mpi4py's signature)
        self,
        sendobj: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status: Status | None = None,
    ) -> Any:
        """Send and receive."""
        send = self.isend(sendobj, dest, sendtag)
        result = self.recv(recvbuf, source, recvtag, status)
        send.Wait()
        return result

    # The lowercase probes are the uppercase ones: a probe moves no data, pickled or not.
    probe = Probe
    iprobe = Iprobe
    mprobe = Mprobe
    improbe = Improbe
