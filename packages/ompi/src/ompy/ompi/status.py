"""``Status``: what a completed receive (or a probe) reports about its message.

A status records the source, the tag, the error code, the number of bytes received and whether
the operation was cancelled; ``Get_count`` turns the byte count into elements of a datatype.
A new status holds ``source=ANY_SOURCE``, ``tag=ANY_TAG``, ``error=SUCCESS``, as mpi4py's does.
"""

from __future__ import annotations

import operator

from .constants import ANY_SOURCE, ANY_TAG
from .datatype.datatype import Datatype
from .datatype.predefined import BYTE
from .errors import ERR_COUNT, SUCCESS
from .errors import Exception as MPIException


class Status:
    """Status object."""

    __slots__ = ("MPI_ERROR", "MPI_SOURCE", "MPI_TAG", "cancelled_flag", "nbytes")

    def __init__(self, status: Status | None = None) -> None:
        if status is None:
            self.MPI_SOURCE = ANY_SOURCE
            self.MPI_TAG = ANY_TAG
            self.MPI_ERROR = SUCCESS
            #: Bytes of data the operation moved (what ``Get_count`` divides).
            self.nbytes = 0
            self.cancelled_flag = False
        elif isinstance(status, Status):
            self.MPI_SOURCE = status.MPI_SOURCE
            self.MPI_TAG = status.MPI_TAG
            self.MPI_ERROR = status.MPI_ERROR
            self.nbytes = status.nbytes
            self.cancelled_flag = status.cancelled_flag
        else:
            raise TypeError(f"Status() copies a Status, not {type(status).__name__}")

    def _fields(self) -> tuple[int, int, int, int, bool]:
        return self.MPI_SOURCE, self.MPI_TAG, self.MPI_ERROR, self.nbytes, self.cancelled_flag

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self._fields() == other._fields()

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self._fields() != other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, like mpi4py's

    def __repr__(self) -> str:
        return (
            f"<Status source={self.MPI_SOURCE} tag={self.MPI_TAG} error={self.MPI_ERROR} "
            f"nbytes={self.nbytes}{' cancelled' if self.cancelled_flag else ''}>"
        )

    def __reduce__(self):
        return (_rebuild, self._fields())

    # -- source, tag, error ----------------------------------------------------------------------

    def Get_source(self) -> int:
        """Get message source."""
        return self.MPI_SOURCE

    def Set_source(self, source: int) -> None:
        """Set message source."""
        self.MPI_SOURCE = operator.index(source)

    def Get_tag(self) -> int:
        """Get message tag."""
        return self.MPI_TAG

    def Set_tag(self, tag: int) -> None:
        """Set message tag."""
        self.MPI_TAG = operator.index(tag)

    def Get_error(self) -> int:
        """Get message error."""
        return self.MPI_ERROR

    def Set_error(self, error: int) -> None:
        """Set message error."""
        self.MPI_ERROR = operator.index(error)

    @property
    def source(self) -> int:
        """Message source."""
        return self.MPI_SOURCE

    @source.setter
    def source(self, value: int) -> None:
        self.Set_source(value)

    @property
    def tag(self) -> int:
        """Message tag."""
        return self.MPI_TAG

    @tag.setter
    def tag(self, value: int) -> None:
        self.Set_tag(value)

    @property
    def error(self) -> int:
        """Message error."""
        return self.MPI_ERROR

    @error.setter
    def error(self, value: int) -> None:
        self.Set_error(value)

    # -- counts ------------------------------------------------------------------------------------

    def Get_count(self, datatype: Datatype = BYTE) -> int:
        """Get the number of *top level* elements (``UNDEFINED`` if not a whole number)."""
        return _datatype(datatype).count_of(self.nbytes)

    def Get_elements(self, datatype: Datatype) -> int:
        """Get the number of basic elements in a datatype (``UNDEFINED`` if not whole)."""
        return _datatype(datatype).elements_of(self.nbytes)

    def Set_elements(self, datatype: Datatype, count: int) -> None:
        """Set the number of elements in a status (in basic elements of ``datatype``)."""
        layout = _datatype(datatype).layout
        count = operator.index(count)
        if count < 0:
            raise MPIException(ERR_COUNT, f"Set_elements: the count must not be negative: {count}")
        basics = layout.basic_sizes
        whole, rest = divmod(count, len(basics))
        self.nbytes = whole * layout.size + sum(basics[:rest])

    @property
    def count(self) -> int:
        """Byte count."""
        return self.Get_count(BYTE)

    # -- cancellation ------------------------------------------------------------------------------

    def Is_cancelled(self) -> bool:
        """Test to see if a request was cancelled."""
        return self.cancelled_flag

    def Set_cancelled(self, flag: bool) -> None:
        """Set the cancelled state associated with a status."""
        self.cancelled_flag = bool(flag)

    @property
    def cancelled(self) -> bool:
        """Cancelled state."""
        return self.cancelled_flag


def _datatype(datatype: object) -> Datatype:
    if not isinstance(datatype, Datatype):
        raise TypeError(f"expecting a Datatype, not {type(datatype).__name__}")
    return datatype


def _rebuild(source: int, tag: int, error: int, nbytes: int, cancelled: bool) -> Status:
    status = Status()
    status.MPI_SOURCE, status.MPI_TAG, status.MPI_ERROR = source, tag, error
    status.nbytes, status.cancelled_flag = nbytes, cancelled
    return status
