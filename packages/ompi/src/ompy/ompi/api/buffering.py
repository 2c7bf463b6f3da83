"""Buffered-send buffers of MPI 4.1: per communicator, per session and per process.

``Comm.Attach_buffer`` gives a communicator a buffer of its own and ``Session.Attach_buffer``
gives one to a session; ``MPI.Attach_buffer`` still attaches the process's.  A buffered send
(``Bsend``, ``Ibsend``, ``bsend``) on a communicator copies its message into the first of
these that is attached (:func:`~.bsend.buffer_pool`):

1. the communicator's own buffer;
2. else, for a communicator derived from a session (``Create_from_group`` of a process-set
   group, and every communicator made from that one), the session's buffer;
3. else the process's buffer.

Each owner has ``Attach_buffer(buf)`` (a writable buffer, or ``None``/``BUFFER_AUTOMATIC``
for "allocate as needed"), ``Detach_buffer()`` (waits for the sends in that buffer, then
returns what was attached), ``Flush_buffer()`` (waits for them and keeps the buffer) and
``Iflush_buffer()`` (a request that completes when they are sent).  Only one buffer is
attached to an owner at a time.  A communicator's or session's pool is made when it first
attaches one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..instance import Instance, current
from .bsend import BsendPool
from .communicator import Communicator
from .request import Request

if TYPE_CHECKING:
    from .session import SessionState

__all__ = ["CommBuffering", "Flush_buffer", "Iflush_buffer", "SessionBuffering"]


class CommBuffering:
    """The buffered-send buffer calls of :class:`~.comm.Comm` (``_live`` gives the
    communicator)."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    def Attach_buffer(self, buf: Any) -> None:
        """Attach a user-provided buffer for sending in buffered mode."""
        c = self._live("Comm.Attach_buffer")
        if c.bsend is None:
            c.bsend = BsendPool(c.instance.bsend)
        c.bsend.attach(buf)

    def Detach_buffer(self) -> Any:
        """Remove an existing attached buffer."""
        c = self._live("Comm.Detach_buffer")
        return _detach(c.instance, c.bsend, "Comm.Detach_buffer")

    def Flush_buffer(self) -> None:
        """Block until all buffered messages have been transmitted."""
        c = self._live("Comm.Flush_buffer")
        _flush(c.instance, c.bsend)

    def Iflush_buffer(self) -> Request:
        """Nonblocking flush for buffered messages."""
        c = self._live("Comm.Iflush_buffer")
        return _iflush(c.bsend, c)


class SessionBuffering:
    """The buffered-send buffer calls of :class:`~.session.Session` (``_live`` gives its
    state)."""

    __slots__ = ()

    def _live(self, call: str) -> SessionState:  # provided by Session
        raise NotImplementedError

    def Attach_buffer(self, buf: Any) -> None:
        """Attach a user-provided buffer for sending in buffered mode."""
        state = self._live("Session.Attach_buffer")
        if state.bsend is None:
            state.bsend = BsendPool(state.instance.bsend)
        state.bsend.attach(buf)

    def Detach_buffer(self) -> Any:
        """Remove an existing attached buffer."""
        state = self._live("Session.Detach_buffer")
        return _detach(state.instance, state.bsend, "Session.Detach_buffer")

    def Flush_buffer(self) -> None:
        """Block until all buffered messages have been transmitted."""
        state = self._live("Session.Flush_buffer")
        _flush(state.instance, state.bsend)

    def Iflush_buffer(self) -> Request:
        """Nonblocking flush for buffered messages."""
        state = self._live("Session.Iflush_buffer")
        return _iflush(state.bsend, _anchor(state.instance))


# -- the process's buffer -------------------------------------------------------------------------


def Flush_buffer() -> None:
    """Block until all buffered messages have been transmitted."""
    instance = current("Flush_buffer")
    _flush(instance, instance.bsend)


def Iflush_buffer() -> Request:
    """Nonblocking flush for buffered messages."""
    instance = current("Iflush_buffer")
    return _iflush(instance.bsend, _anchor(instance))


# -- helpers --------------------------------------------------------------------------------------


def _detach(instance: Instance, pool: BsendPool | None, call: str) -> Any:
    if pool is None:
        pool = BsendPool(instance.bsend)  # never attached: detach reports that
    instance.engine.wait_until(lambda: pool.pending == 0)
    return pool.detach()


def _flush(instance: Instance, pool: BsendPool | None) -> None:
    if pool is not None and pool.pending:
        instance.engine.wait_until(lambda: pool.pending == 0)


def _iflush(pool: BsendPool | None, anchor: Communicator) -> Request:
    core = BsendPool().flush_request() if pool is None else pool.flush_request()
    return Request._of(core, anchor)


def _anchor(instance: Instance) -> Communicator:
    """A communicator of ``instance`` whose progress engine a flush request waits with.

    ``MPI.Request`` reaches the progress engine through a communicator; a flush of the
    process's or a session's buffer has none of its own, so it takes ``COMM_SELF`` when the
    world model is initialized and the instance's rendezvous channel otherwise (both live as
    long as the instance and share its engine).
    """
    from .comm import COMM_SELF  # the handles module builds on this one

    self_comm = COMM_SELF._c
    if self_comm is not None and not self_comm.freed and self_comm.instance is instance:
        return self_comm
    return instance.rendezvous.open()
