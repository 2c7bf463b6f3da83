"""The buffer of buffered sends (``MPI.Attach_buffer``): where Bsend copies its messages.

A buffered send copies the message into the attached buffer and completes at once; the copy is
then sent in standard mode and its space is released when that send completes.  Each message
takes its size plus ``BSEND_OVERHEAD`` bytes, as MPI tells programs to budget for
(``MPI.BSEND_OVERHEAD``).  The space is managed first-fit over a list of free extents, which
stays short because buffered sends are few and complete in order.  ``BUFFER_AUTOMATIC``
(MPI 4.1) lets the library allocate the copies itself, without a limit.

MPI 4.1 gives a buffer to each communicator and session too (:mod:`.buffering`): every one is
a pool of its own, and the process's pool (``instance.bsend``) also counts the sends pending in
all of them (``outstanding``), which ``Finalize`` waits for.  A flush (``Flush_buffer``) is a
request that completes when the pool has no pending send left.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ..completion import CoreRequest
from ..constants import BSEND_OVERHEAD, BUFFER_AUTOMATIC
from ..datatype.buffer import BufferSpec, export_buffer
from ..errors import ERR_BUFFER
from ..errors import Exception as MPIException

if TYPE_CHECKING:
    from .communicator import Communicator


def buffer_pool(comm: Communicator) -> BsendPool:
    """The buffer a buffered send on ``comm`` uses, in MPI 4.1's order: the communicator's own,
    else its session's (a communicator derived from a session), else the process's."""
    pool = comm.bsend
    if pool is not None and pool.is_attached:
        return pool
    session = comm.session
    if session is not None:
        pool = session.bsend
        if pool is not None and pool.is_attached:
            return pool
    return comm.instance.bsend


@attrs.define(eq=False)
class Reservation:
    """One message's space in the attached buffer (``None`` offset: allocated automatically)."""

    offset: int
    size: int
    view: memoryview


class BsendPool:
    """One attached buffer (of the process, a communicator or a session) and the space its
    pending buffered sends hold."""

    def __init__(self, process: BsendPool | None = None) -> None:
        self._obj: Any = None
        self._view: memoryview | None = None
        self._automatic = False
        self._free: list[tuple[int, int]] = []  # (offset, size), sorted by offset
        #: Buffered sends copied into this pool and not yet sent.
        self.pending = 0
        #: On the process's pool: the pending sends of every pool of the instance.
        self.outstanding = 0
        self._process = self if process is None else process
        #: Flush requests waiting for ``pending`` to reach 0.
        self._flushes: list[CoreRequest] = []

    @property
    def is_attached(self) -> bool:
        """Whether a buffer (or ``BUFFER_AUTOMATIC``) is attached."""
        return self._view is not None or self._automatic

    def flush_request(self) -> CoreRequest:
        """A request that completes once every send now pending in this pool has gone."""
        request = CoreRequest()
        if self.pending == 0:
            request.complete = True
        else:
            self._flushes.append(request)
        return request

    @property
    def attached(self) -> Any:
        """The object attached (``None`` when nothing is)."""
        return BUFFER_AUTOMATIC if self._automatic else self._obj

    def attach(self, buf: Any) -> None:
        """Attach ``buf`` (a writable buffer, or ``None``/``BUFFER_AUTOMATIC``)."""
        if self._view is not None or self._automatic:
            raise MPIException(
                ERR_BUFFER,
                "Attach_buffer: a buffer is already attached; detach it first (Detach_buffer)",
            )
        if buf is None or buf is BUFFER_AUTOMATIC:
            self._automatic = True
            return
        view, _ = export_buffer(buf, readonly=False, infer=False)
        self._obj = buf
        self._view = view
        self._free = [(0, view.nbytes)] if view.nbytes else []

    def detach(self) -> Any:
        """Forget the buffer and return it; the caller has waited for ``pending`` to reach 0."""
        if self._view is None and not self._automatic:
            raise MPIException(ERR_BUFFER, "Detach_buffer: no buffer is attached")
        obj = self.attached
        self._obj = self._view = None
        self._automatic = False
        self._free = []
        return obj

    def copy_in(self, spec: BufferSpec, call: str) -> tuple[BufferSpec, Reservation]:
        """Copy the message into the buffer; returns the copy's spec and its reservation."""
        nbytes = spec.nbytes
        if self._automatic:
            space = bytearray(nbytes)
            view = memoryview(space)
            reservation = Reservation(-1, nbytes, view)
        else:
            reservation = self._reserve(nbytes, call)
            view = reservation.view
        if spec.convertor is None:
            view[:] = spec.view
        else:  # a non-contiguous layout: the copy is its packed stream
            spec.convertor.pack(0, view)
        self.pending += 1
        self._process.outstanding += 1
        return BufferSpec(view, spec.count, spec.datatype, view), reservation

    def release(self, reservation: Reservation) -> None:
        """Give a completed send's space back."""
        self.pending -= 1
        self._process.outstanding -= 1
        if self.pending == 0 and self._flushes:
            flushes, self._flushes = self._flushes, []
            for request in flushes:
                request.finish()
        if reservation.offset < 0:
            return
        self._free.append((reservation.offset, reservation.size))
        self._free.sort()
        merged: list[tuple[int, int]] = []
        for offset, size in self._free:
            if merged and merged[-1][0] + merged[-1][1] == offset:
                merged[-1] = (merged[-1][0], merged[-1][1] + size)
            else:
                merged.append((offset, size))
        self._free = merged

    def _reserve(self, nbytes: int, call: str) -> Reservation:
        if self._view is None:
            raise MPIException(
                ERR_BUFFER,
                f"{call}: no buffer is attached for buffered sends (to the communicator, its "
                f"session or the process); call MPI.Attach_buffer(bytearray(size)) or "
                f"comm.Attach_buffer(...) with room for each message plus "
                f"MPI.BSEND_OVERHEAD ({BSEND_OVERHEAD}) bytes",
            )
        need = nbytes + BSEND_OVERHEAD
        for index, (offset, size) in enumerate(self._free):
            if size >= need:
                if size == need:
                    del self._free[index]
                else:
                    self._free[index] = (offset + need, size - need)
                view = self._view[offset + BSEND_OVERHEAD : offset + need]
                return Reservation(offset, need, view)
        largest = max((size for _, size in self._free), default=0)
        raise MPIException(
            ERR_BUFFER,
            f"{call}: the message of {nbytes} bytes needs {need} bytes of the attached buffer "
            f"(with MPI.BSEND_OVERHEAD = {BSEND_OVERHEAD}), but the largest free space is "
            f"{largest} of {self._view.nbytes} bytes; attach a larger buffer or wait for "
            "pending buffered sends",
        )
