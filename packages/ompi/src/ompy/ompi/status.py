"""``Status``: what a completed receive (or a probe, or a generalized request) reports.

A status records the source, the tag, the error code, the number of bytes received and whether
the operation was cancelled; ``Get_count`` turns the byte count into elements of a datatype.
A new status holds ``source=ANY_SOURCE``, ``tag=ANY_TAG``, ``error=SUCCESS``, as mpi4py's does.

The fields live in 24 bytes laid out as Open MPI's ``MPI_Status`` (``MPI_SOURCE``, ``MPI_TAG``,
``MPI_ERROR``, a cancelled flag, then the byte count as a 64-bit unsigned integer), because
mpi4py exposes that memory: ``tomemory()`` is a writable view of it as C ints, and the Fortran
form (``py2f``/``f2py``) is the same ints as a list of ``F_STATUS_SIZE`` integers.
"""

from __future__ import annotations

import copyreg
import operator
import sys
from array import array
from collections.abc import Sequence
from typing import Any

from .accessors import GetSetProperty
from .constants import ANY_SOURCE, ANY_TAG
from .datatype.datatype import Datatype
from .datatype.predefined import BYTE
from .errors import ERR_COUNT
from .errors import Exception as MPIException

#: Integers in the Fortran form of a status (Open MPI's ``MPI_F_STATUS_SIZE``).
F_STATUS_SIZE = 6
#: Positions of the source, tag and error in the Fortran form (0-based, as ``MPI_F_SOURCE``...).
F_SOURCE = 0
F_TAG = 1
F_ERROR = 2

_CANCELLED = 3  # int slot of the cancelled flag
#: The int slots of the low and high halves of the 64-bit byte count (native byte order).
_LO, _HI = (4, 5) if sys.byteorder == "little" else (5, 4)
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_COUNT_MAX = 2**63 - 1
#: A new status: ANY_SOURCE, ANY_TAG, SUCCESS, not cancelled, no bytes (copied, not built).
_EMPTY = array("i", [ANY_SOURCE, ANY_TAG, 0, 0, 0, 0])


class Status:
    """Status object."""

    __slots__ = ("_int",)

    #: The fields as six C ints (an ``array``, so ``tomemory`` is a view of them).
    _int: array

    def __new__(cls, status: Status | None = None) -> Status:
        self = object.__new__(cls)
        if status is None:
            self._int = _EMPTY.__copy__()
        elif isinstance(status, Status):
            self._int = status._int.__copy__()
        else:
            raise TypeError(f"Status() copies a Status, not {type(status).__name__}")
        return self

    def _fill(self, source: int, tag: int, error: int, nbytes: int, cancelled: bool) -> None:
        """Set every field at once (what a completed operation reports; engines call this)."""
        ints = self._int
        ints[0] = source
        ints[1] = tag
        ints[2] = error
        ints[_CANCELLED] = 1 if cancelled else 0
        if nbytes <= _INT_MAX:
            ints[_LO] = nbytes
            ints[_HI] = 0
        else:
            self._set_nbytes(nbytes)

    def _copy_from(self, other: Status) -> None:
        """Take every field of ``other`` (the views on this status stay valid)."""
        self._int[:] = other._int

    @property
    def _nbytes(self) -> int:
        ints = self._int
        return (ints[_LO] & 0xFFFFFFFF) | (ints[_HI] << 32)

    def _set_nbytes(self, nbytes: int) -> None:
        low = nbytes & 0xFFFFFFFF
        self._int[_LO] = low - (1 << 32) if low > _INT_MAX else low
        self._int[_HI] = nbytes >> 32

    # -- comparison, printing, pickling --------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self._int == other._int

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self._int != other._int

    __hash__ = None  # type: ignore[assignment]  # mutable, like mpi4py's

    def __repr__(self) -> str:
        return (
            f"<Status source={self.source} tag={self.tag} error={self.error} "
            f"count={self._nbytes}{' cancelled' if self.cancelled else ''}>"
        )

    def __reduce__(self) -> tuple[Any, tuple[Any, ...], dict[str, int]]:
        return (copyreg.__newobj__, (type(self),), self.__getstate__())  # type: ignore[attr-defined]

    def __getstate__(self) -> dict[str, int]:
        return {
            "source": self.source,
            "tag": self.tag,
            "error": self.error,
            "count": self._nbytes,
            "cancelled": self.cancelled,
        }

    def __setstate__(self, state: dict[str, int]) -> None:
        self.Set_source(state["source"])
        self.Set_tag(state["tag"])
        self.Set_error(state["error"])
        if "count" in state:
            self.Set_elements(BYTE, state["count"])
        if "cancelled" in state:
            self.Set_cancelled(bool(state["cancelled"]))

    # -- source, tag, error --------------------------------------------------------------------

    def _set_int(self, slot: int, value: int, what: str) -> None:
        value = operator.index(value)
        if not _INT_MIN <= value <= _INT_MAX:
            raise OverflowError(f"Status.{what}: {value} does not fit in a C int")
        self._int[slot] = value

    def Get_source(self) -> int:
        """Get message source."""
        return self._int[0]

    def Set_source(self, source: int) -> None:
        """Set message source."""
        self._set_int(0, source, "Set_source")

    def Get_tag(self) -> int:
        """Get message tag."""
        return self._int[1]

    def Set_tag(self, tag: int) -> None:
        """Set message tag."""
        self._set_int(1, tag, "Set_tag")

    def Get_error(self) -> int:
        """Get message error."""
        return self._int[2]

    def Set_error(self, error: int) -> None:
        """Set message error."""
        self._set_int(2, error, "Set_error")

    source = GetSetProperty(Get_source, Set_source, "Message source.")
    tag = GetSetProperty(Get_tag, Set_tag, "Message tag.")
    error = GetSetProperty(Get_error, Set_error, "Message error.")

    # -- counts --------------------------------------------------------------------------------

    def Get_count(self, datatype: Datatype = BYTE) -> int:
        """Get the number of *top level* elements (``UNDEFINED`` if not a whole number)."""
        return _datatype(datatype).count_of(self._nbytes)

    def Get_elements(self, datatype: Datatype) -> int:
        """Get the number of basic elements in a datatype (``UNDEFINED`` if not whole)."""
        return _datatype(datatype).elements_of(self._nbytes)

    def Set_elements(self, datatype: Datatype, count: int) -> None:
        """Set the number of elements in a status (in basic elements of ``datatype``).

        Meant for the query callback of a generalized request, as in mpi4py.
        """
        datatype = _datatype(datatype)
        count = operator.index(count)
        if count < 0:
            raise MPIException(ERR_COUNT, f"Set_elements: the count must not be negative: {count}")
        nbytes = datatype.bytes_of_elements(count)
        if nbytes is None:
            name = _name_of(datatype)
            raise MPIException(ERR_COUNT, f"Set_elements: {name} has no basic elements")
        if nbytes > _COUNT_MAX:
            raise OverflowError(f"Set_elements: {count} elements ({nbytes} bytes) is too large")
        self._set_nbytes(nbytes)

    @property
    def count(self) -> int:
        """Byte count."""
        return self.Get_count(BYTE)

    @count.setter
    def count(self, value: int) -> None:
        self.Set_elements(BYTE, value)

    # -- cancellation --------------------------------------------------------------------------

    def Is_cancelled(self) -> bool:
        """Test to see if a request was cancelled."""
        return self._int[_CANCELLED] != 0

    def Set_cancelled(self, flag: bool) -> None:
        """Set the cancelled state associated with a status (for generalized requests)."""
        self._int[_CANCELLED] = 1 if flag else 0

    @property
    def cancelled(self) -> bool:
        """Cancelled state."""
        return self._int[_CANCELLED] != 0

    @cancelled.setter
    def cancelled(self, value: bool) -> None:
        self.Set_cancelled(value)

    # -- memory and the Fortran form -----------------------------------------------------------

    def tomemory(self) -> memoryview:
        """Return status memory view (writable C ints: source, tag, error, cancelled, count)."""
        return memoryview(self._int)

    def py2f(self) -> list[int]:
        """The Fortran form of the status: ``F_STATUS_SIZE`` integers."""
        return list(self._int)

    @classmethod
    def f2py(cls, arg: Sequence[int]) -> Status:
        """A status from its Fortran form (``F_STATUS_SIZE`` integers)."""
        if len(arg) < F_STATUS_SIZE:
            raise IndexError(
                f"Status.f2py: a Fortran status has {F_STATUS_SIZE} integers, got {len(arg)}"
            )
        status = cls()
        for slot in range(F_STATUS_SIZE):
            status._set_int(slot, arg[slot], "f2py")
        return status


def _name_of(datatype: Datatype) -> str:
    return datatype.Get_name() or "the datatype"


def _datatype(datatype: object) -> Datatype:
    if not isinstance(datatype, Datatype):
        raise TypeError(f"expecting a Datatype, not {type(datatype).__name__}")
    return datatype
