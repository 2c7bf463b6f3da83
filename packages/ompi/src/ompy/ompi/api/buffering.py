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

from typing import TYPE_CHECKING, Any, ClassVar

from ..instance import Instance, current
from .bsend import BsendPool
from .communicator import Communicator
from .request import Request

if TYPE_CHECKING:
    from .session import SessionState

__all__ = ["CommBuffering", "Flush_buffer", "Iflush_buffer", "SessionBuffering"]


class _OwnerBuffering:
    """The buffer calls of an owner of a pool: a communicator, or a session's state.

    ``_live`` (provided by the handle class) gives the owner, whose ``bsend`` is its pool
    (``None`` until it attaches one) and ``instance`` the MPI instance it belongs to.
    """

    __slots__ = ()

    #: The class the calls are named after in errors ("Comm.Attach_buffer").
    _buffer_owner: ClassVar[str]

    def _live(self, call: str) -> Any:  # provided by the handle class
        raise NotImplementedError

    def _flush_anchor(self, owner: Any) -> Communicator:
        """The communicator whose progress engine an ``Iflush_buffer`` request waits with."""
        raise NotImplementedError

    def Attach_buffer(self, buf: Any) -> None:
        """Attach a user-provided buffer for sending in buffered mode."""
        owner = self._live(f"{self._buffer_owner}.Attach_buffer")
        if owner.bsend is None:
            owner.bsend = BsendPool(owner.instance.bsend)
        owner.bsend.attach(buf)

    def Detach_buffer(self) -> Any:
        """Remove an existing attached buffer."""
        call = f"{self._buffer_owner}.Detach_buffer"
        owner = self._live(call)
        return _detach(owner.instance, owner.bsend, call)

    def Flush_buffer(self) -> None:
        """Block until all buffered messages have been transmitted."""
        owner = self._live(f"{self._buffer_owner}.Flush_buffer")
        _flush(owner.instance, owner.bsend)

    def Iflush_buffer(self) -> Request:
        """Nonblocking flush for buffered messages."""
        owner = self._live(f"{self._buffer_owner}.Iflush_buffer")
        return _iflush(owner.bsend, self._flush_anchor(owner))


class CommBuffering(_OwnerBuffering):
    """The buffered-send buffer calls of :class:`~.comm.Comm` (``_live`` gives the
    communicator)."""

    __slots__ = ()
    _buffer_owner = "Comm"

    def _flush_anchor(self, owner: Communicator) -> Communicator:
        return owner


class SessionBuffering(_OwnerBuffering):
    """The buffered-send buffer calls of :class:`~.session.Session` (``_live`` gives its
    state)."""

    __slots__ = ()
    _buffer_owner = "Session"

    def _flush_anchor(self, owner: SessionState) -> Communicator:
        return _anchor(owner.instance)


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
