"""What an ``MPI.Op`` handle refers to, and the table of Fortran handles.

One :class:`Operation` exists per predefined operation and per ``Op.Create`` call; handles
(``MPI.Op(op)``) share it, as C handles share an ``MPI_Op``.  Its Fortran handle is its index in
a process-wide table, numbered as Open MPI numbers them (``MPI_SUM`` is 3, user-defined
operations from 15 up, reusing freed numbers), so ``py2f``/``f2py`` are a dict lookup.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Final

import attrs

from ..mca.op import Intrinsic, Kernel

#: The first Fortran handle given to user-defined operations (after Open MPI's MPI_NO_OP, 14).
FIRST_USER_INDEX: Final = 15


@attrs.define(eq=False)
class Operation:
    """A reduction operation: predefined (``intrinsic`` set) or user-defined (``function``)."""

    #: ``"SUM"`` for predefined operations, the function's name for user-defined ones.
    name: str
    intrinsic: Intrinsic | None
    #: The user's ``function(inmem, inoutmem, datatype)``; ``None`` for predefined operations.
    function: Callable[[Any, Any, Any], Any] | None
    commute: bool
    #: ``op(x, y)`` on Python objects.
    call: Callable[[Any, Any], Any]
    #: The Fortran handle (index in the table below).
    index: int = 0
    #: Set by ``Free``; other handles to a freed operation then fail clearly.
    freed: bool = False
    #: A user-defined operation's kernel per datatype layout (dropped by ``Free``).  They live
    #: here, not in an instance's cache, so that freeing reaches every instance at once.
    kernels: dict[Any, Kernel] = attrs.field(factory=dict)


_lock = threading.Lock()
_table: dict[int, Operation] = {}


def register(operation: Operation, index: int | None = None) -> Operation:
    """Give ``operation`` its Fortran handle: ``index``, or the lowest free user number."""
    with _lock:
        if index is None:
            index = FIRST_USER_INDEX
            while index in _table:
                index += 1
        operation.index = index
        _table[index] = operation
    return operation


def unregister(operation: Operation) -> None:
    """Release the Fortran handle of a freed operation."""
    with _lock:
        if _table.get(operation.index) is operation:
            del _table[operation.index]


def lookup(index: int) -> Operation | None:
    """The operation with Fortran handle ``index``; ``None`` for 0 (OP_NULL) or an unknown one."""
    return _table.get(index)
