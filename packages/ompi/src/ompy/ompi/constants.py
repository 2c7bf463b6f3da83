"""MPI's integer constants and special buffer addresses, with the values Open MPI gives them.

Programs written for mpi4py on Open MPI sometimes depend on these numbers (a status printed in a
log, ``UNDEFINED`` stored in a file, ``tag == -1`` in a test), so every value here is the one
Open MPI 5's ``mpi.h`` defines.  Values ompy chooses itself say so where they are defined.
"""

from __future__ import annotations

from typing import ClassVar, Final, Self

# -- wildcards and special ranks ----------------------------------------------------------------

#: Receive from any source (``MPI_ANY_SOURCE``).
ANY_SOURCE: Final = -1
#: Receive with any non-negative tag (``MPI_ANY_TAG``).
ANY_TAG: Final = -1
#: The null process: communication with it completes at once and moves no data.
PROC_NULL: Final = -2
#: The root of an inter-communicator collective in the root's group (``MPI_ROOT``).
ROOT: Final = -4
#: "No such value", e.g. the rank of a process outside a group.
UNDEFINED: Final = -32766
#: An invalid attribute key.
KEYVAL_INVALID: Final = -1

# -- results of Compare -------------------------------------------------------------------------

IDENT: Final = 0
CONGRUENT: Final = 1
SIMILAR: Final = 2
UNEQUAL: Final = 3

# -- thread support levels ----------------------------------------------------------------------

THREAD_SINGLE: Final = 0
THREAD_FUNNELED: Final = 1
THREAD_SERIALIZED: Final = 2
THREAD_MULTIPLE: Final = 3

# -- predefined attribute keys (values of the key, not of the attribute) -----------------------

TAG_UB: Final = 0
HOST: Final = 1
IO: Final = 2
WTIME_IS_GLOBAL: Final = 3
APPNUM: Final = 4
LASTUSEDCODE: Final = 5
UNIVERSE_SIZE: Final = 6

#: The largest tag a program may use: the value of the ``TAG_UB`` attribute.  The ob1 headers
#: carry a signed 32-bit tag, as Open MPI's do, so this is Open MPI's value too.
TAG_UB_VALUE: Final = 2**31 - 1

# -- sizes --------------------------------------------------------------------------------------

BSEND_OVERHEAD: Final = 128
MAX_PROCESSOR_NAME: Final = 256
MAX_ERROR_STRING: Final = 256
MAX_OBJECT_NAME: Final = 64
MAX_PORT_NAME: Final = 1024
MAX_INFO_KEY: Final = 36
MAX_INFO_VAL: Final = 256
MAX_LIBRARY_VERSION_STRING: Final = 256

# -- the version of the MPI standard reported ---------------------------------------------------
# Open MPI 5 reports 3.1; ompy reports 4.1, whose calls it provides (sessions, buffered-send
# buffers per communicator and session, BUFFER_AUTOMATIC, Get_hw_resource_info).

VERSION: Final = 4
SUBVERSION: Final = 1

# -- array orders -------------------------------------------------------------------------------

ORDER_C: Final = 0
ORDER_FORTRAN: Final = 1
ORDER_F: Final = ORDER_FORTRAN


# -- special buffer addresses ----------------------------------------------------------------------


class _SpecialAddress:
    """A special buffer address: a singleton per class that behaves as its address.

    As in mpi4py, it is not an ``int`` but converts to one (``int()``, ``operator.index``),
    compares and hashes equal to its address, is true when the address is not zero, has no
    arithmetic, and pickles by name back to the same object.  The API recognises these
    objects by identity (``buf is IN_PLACE``), never by value.
    """

    __slots__ = ()
    _name: ClassVar[str]
    _address: ClassVar[int]
    _instance: ClassVar[_SpecialAddress | None] = None

    def __new__(cls) -> Self:
        if cls._instance is None:
            cls._instance = object.__new__(cls)
        return cls._instance  # type: ignore[return-value]

    def __int__(self) -> int:
        return self._address

    def __index__(self) -> int:
        return self._address

    def __bool__(self) -> bool:
        return self._address != 0

    def __hash__(self) -> int:
        return hash(self._address)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, type(self)):
            return True
        if isinstance(other, int):
            return self._address == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        if isinstance(other, type(self)):
            return False
        if isinstance(other, int):
            return self._address != other
        return NotImplemented

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self) -> str:
        return self._name

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: object) -> Self:
        return self


class BottomType(_SpecialAddress):
    """Type of `BOTTOM`: address zero, the origin of absolute addresses."""

    __slots__ = ()
    _name = "BOTTOM"
    _address = 0
    _instance = None


class InPlaceType(_SpecialAddress):
    """Type of `IN_PLACE`: "the data is already where the result goes" (Open MPI's 1)."""

    __slots__ = ()
    _name = "IN_PLACE"
    _address = 1
    _instance = None


class BufferAutomaticType(_SpecialAddress):
    """Type of `BUFFER_AUTOMATIC` (MPI 4.1): "let the library manage Bsend space".

    Open MPI 5 does not define ``MPI_BUFFER_AUTOMATIC``; ompy chooses the address 2, next to
    Open MPI's ``MPI_IN_PLACE`` (1), so that the three special addresses stay distinct.
    """

    __slots__ = ()
    _name = "BUFFER_AUTOMATIC"
    _address = 2
    _instance = None


#: Address zero: a buffer given as absolute addresses (``MPI_BOTTOM``).  ``None`` means the same.
BOTTOM: Final = BottomType()
#: "Use the receive buffer as the send buffer" in collectives (``MPI_IN_PLACE``).
IN_PLACE: Final = InPlaceType()
#: Automatic buffering for buffered sends (``MPI_BUFFER_AUTOMATIC``).
BUFFER_AUTOMATIC: Final = BufferAutomaticType()
