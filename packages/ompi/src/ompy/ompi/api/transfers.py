"""Starting, waiting for and reporting point-to-point transfers: the API's side of the PML.

The PML returns request objects with ``complete``, ``cancelled``, ``source``, ``tag``, ``count``
(bytes), ``error`` and ``exception`` (:class:`~ompy.ompi.mca.pml.PmlRequest`).  Everything
here reads only that shape (:class:`Outcome`), so composite operations (pickled messages, which
are several PML messages) plug into the same waits.
"""

from __future__ import annotations

from typing import Protocol

from ..completion import CoreRequest, chain
from ..constants import ANY_SOURCE, ANY_TAG, PROC_NULL
from ..datatype.buffer import BufferSpec
from ..errors import SUCCESS
from ..mca.pml.interface import PmlRequest, SendMode
from ..status import Status
from .bsend import buffer_pool
from .communicator import Communicator


class Outcome(Protocol):
    """What a wait reads off an operation: done flag, status fields, error (read-only).

    PML requests have this shape, and so do the API's composite operations.
    """

    @property
    def complete(self) -> bool: ...
    @property
    def cancelled(self) -> bool: ...
    @property
    def source(self) -> int: ...
    @property
    def tag(self) -> int: ...
    @property
    def count(self) -> int: ...
    @property
    def error(self) -> int: ...
    @property
    def exception(self) -> BaseException | None: ...


STANDARD = SendMode.STANDARD
BUFFERED = SendMode.BUFFERED
SYNCHRONOUS = SendMode.SYNCHRONOUS
READY = SendMode.READY


def done_request(source: int = ANY_SOURCE, tag: int = ANY_TAG) -> CoreRequest:
    """A request that is already complete (``PROC_NULL`` operations, buffered sends)."""
    request = CoreRequest()
    request.source = source
    request.tag = tag
    request.complete = True
    return request


def proc_null_request() -> CoreRequest:
    """What an operation with ``PROC_NULL`` completes with: source PROC_NULL, tag ANY_TAG."""
    return done_request(PROC_NULL, ANY_TAG)


def start_send(
    comm: Communicator, spec: BufferSpec, dest: int, tag: int, mode: SendMode, *, call: str
) -> PmlRequest:
    """Start a send of ``spec`` (already checked); buffered sends copy and complete at once."""
    if mode is BUFFERED:
        return start_bsend(comm, spec, dest, tag, call)
    return comm.pml.isend(spec, dest, tag, comm, mode)


def start_bsend(comm: Communicator, spec: BufferSpec, dest: int, tag: int, call: str) -> PmlRequest:
    """Copy into the attached buffer, send the copy, release its space once it is sent.

    Under the MPI lock: the pool is the process's, and the release callback must be attached
    before another thread's progress can complete the send.
    """
    pool = buffer_pool(comm)
    with comm.engine.lock:
        copy, reservation = pool.copy_in(spec, call)
        try:
            inner = comm.pml.isend(copy, dest, tag, comm, STANDARD)
        except BaseException:
            pool.release(reservation)
            raise
        if inner.complete:
            pool.release(reservation)
        else:
            chain(inner, lambda _request: pool.release(reservation))
    return done_request()


def wait(comm: Communicator, request: Outcome) -> None:
    """Progress until ``request`` completes."""
    if not request.complete:
        comm.engine.wait_until(lambda: request.complete)


def raise_if_failed(request: Outcome) -> None:
    exception = request.exception
    if exception is not None:
        raise exception


def fill_status(status: Status | None, request: Outcome) -> None:
    """Copy a completed request's source, tag, error, byte count and cancel flag."""
    if status is None:
        return
    status._fill(request.source, request.tag, request.error, request.count, request.cancelled)


def fill_empty(status: Status | None) -> None:
    """The empty status MPI reports for null and inactive requests."""
    if status is None:
        return
    status._fill(ANY_SOURCE, ANY_TAG, SUCCESS, 0, False)


def fill_probe(status: Status | None, source: int, tag: int, count: int) -> None:
    """The status of a probed message."""
    if status is None:
        return
    status._fill(source, tag, SUCCESS, count, False)
