"""Nonblocking send-receive: ``Comm.Isendrecv`` and ``Comm.Isendrecv_replace`` (MPI 4.0).

Both start a send and a receive at once and return one request that completes when both have:
its status is the receive's (source, tag, count), and the first failure of the two is what a
wait raises.  As in the blocking ``Sendrecv``, the send message is read before the receive is
posted, so that a bad send buffer leaves no receive behind; ``PROC_NULL`` on either side makes
that side a no-op without reading its buffer, as mpi4py does.

``Isendrecv_replace`` sends a packed copy of the buffer and receives into the buffer itself,
so the program may not touch the buffer until the request completes (MPI's rule), and the
received message may be shorter than the sent one (the status counts what arrived).
"""

from __future__ import annotations

from typing import Any

from ..completion import CoreRequest, chain
from ..constants import ANY_SOURCE, ANY_TAG, PROC_NULL
from ..datatype.buffer import BufferSpec, parse_buffer
from .checks import dest_rank, recv_tag, send_tag, source_rank
from .communicator import Communicator
from .request import Request
from .transfers import STANDARD, proc_null_request


class PairCore(CoreRequest):
    """A send and a receive in flight as one operation (the request of ``Isendrecv``)."""

    __slots__ = ("_left", "receive", "send")

    def __init__(self, send: Any, receive: Any) -> None:
        super().__init__()
        self.send = send
        self.receive = receive
        self._left = 2
        for part in (send, receive):
            if part.complete:
                self._part_done(part)
            else:
                chain(part, self._part_done)

    def _part_done(self, _part: Any) -> None:
        self._left -= 1
        if self._left:
            return
        receive, send = self.receive, self.send
        self.source, self.tag, self.count = receive.source, receive.tag, receive.count
        self.cancelled = receive.cancelled
        failed = receive if receive.exception is not None else send
        if failed.exception is not None:
            self.fail(failed.error, failed.exception)
        else:
            self.finish()

    def cancel(self) -> None:
        """Cancel both halves (each as far as its engine can)."""
        self.receive.cancel()
        self.send.cancel()


class SendReceive:
    """The nonblocking send-receive half of :class:`~.comm.Comm`."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    @classmethod
    def _pair(
        cls,
        send: tuple[BufferSpec | None, int, int],
        receive: tuple[Any, int, int],
        c: Communicator,
    ) -> Request:
        """Post the receive (``receive``: a spec or None, source, tag), then start the send."""
        spec, dest, sendtag = send
        recvspec, source, recvtag = receive
        engine = c.engine
        if engine.threaded:  # another thread's progress must not complete a half unseen
            with engine.lock:
                core = cls._start_pair(c, spec, dest, sendtag, recvspec, source, recvtag)
        else:
            core = cls._start_pair(c, spec, dest, sendtag, recvspec, source, recvtag)
        return Request._of(core, c)

    @staticmethod
    def _start_pair(  # noqa: PLR0917 (the two halves' arguments)
        c: Communicator,
        spec: BufferSpec | None,
        dest: int,
        sendtag: int,
        recvspec: BufferSpec | None,
        source: int,
        recvtag: int,
    ) -> PairCore:
        pml = c.pml
        if recvspec is None:
            receive: Any = proc_null_request()
        else:
            receive = pml.irecv(recvspec, source, recvtag, c)
        send = proc_null_request() if spec is None else pml.isend(spec, dest, sendtag, c, STANDARD)
        return PairCore(send, receive)

    def _pair_args(
        self, call: str, dest: Any, sendtag: Any, source: Any, recvtag: Any
    ) -> tuple[Communicator, int, int, int, int]:
        c = self._live(call)
        dest = dest_rank(dest, c.remote_size, call)
        sendtag = send_tag(sendtag, c.tag_ub, call)
        source = source_rank(source, c.remote_size, call)
        recvtag = recv_tag(recvtag, c.tag_ub, call)
        return c, dest, sendtag, source, recvtag

    def Isendrecv(  # noqa: PLR0917 (mpi4py's signature)
        self,
        sendbuf: Any,
        dest: int,
        sendtag: int = 0,
        recvbuf: Any = None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
    ) -> Request:
        """Nonblocking send and receive."""
        call = "Comm.Isendrecv"
        c, dest, sendtag, source, recvtag = self._pair_args(call, dest, sendtag, source, recvtag)
        spec = None if dest == PROC_NULL else parse_buffer(sendbuf)
        recvspec = None if source == PROC_NULL else parse_buffer(recvbuf, readonly=False)
        return self._pair((spec, dest, sendtag), (recvspec, source, recvtag), c)

    def Isendrecv_replace(
        self,
        buf: Any,
        dest: int,
        sendtag: int = 0,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
    ) -> Request:
        """Nonblocking send and receive, in place: the received data replaces the sent data."""
        call = "Comm.Isendrecv_replace"
        c, dest, sendtag, source, recvtag = self._pair_args(call, dest, sendtag, source, recvtag)
        if dest == PROC_NULL and source == PROC_NULL:
            return self._pair((None, dest, sendtag), (None, source, recvtag), c)
        spec = parse_buffer(buf, readonly=source == PROC_NULL)
        outgoing: BufferSpec | None = None
        if dest != PROC_NULL:
            # The receive overwrites the buffer: send a packed copy (a spec of that stream).
            copy = memoryview(bytearray(spec.nbytes))
            copy[:] = spec.packed()
            outgoing = type(spec)(copy, spec.count, spec.datatype, copy)
        recvspec = None if source == PROC_NULL else spec
        return self._pair((outgoing, dest, sendtag), (recvspec, source, recvtag), c)
