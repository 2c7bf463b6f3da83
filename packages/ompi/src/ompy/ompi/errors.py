"""MPI error classes and :class:`Exception`, the error every failing MPI call raises.

The numbering is Open MPI 5's (``mpi.h``), which is what mpi4py on Open MPI exposes, so a program
that compares ``error.Get_error_class()`` with ``MPI.ERR_TRUNCATE`` (or with 15) behaves the same
here.  The error strings follow Open MPI's ``"MPI_ERR_NAME: what it means"`` shape.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Final

from ompy.orte.consequence import Consequential

from .accessors import GetProperty

if TYPE_CHECKING:
    from .error_codes import ErrorCodes

SUCCESS: Final = 0
ERR_BUFFER: Final = 1
ERR_COUNT: Final = 2
ERR_TYPE: Final = 3
ERR_TAG: Final = 4
ERR_COMM: Final = 5
ERR_RANK: Final = 6
ERR_REQUEST: Final = 7
ERR_ROOT: Final = 8
ERR_GROUP: Final = 9
ERR_OP: Final = 10
ERR_TOPOLOGY: Final = 11
ERR_DIMS: Final = 12
ERR_ARG: Final = 13
ERR_UNKNOWN: Final = 14
ERR_TRUNCATE: Final = 15
ERR_OTHER: Final = 16
ERR_INTERN: Final = 17
ERR_IN_STATUS: Final = 18
ERR_PENDING: Final = 19
ERR_ACCESS: Final = 20
ERR_AMODE: Final = 21
ERR_ASSERT: Final = 22
ERR_BAD_FILE: Final = 23
ERR_BASE: Final = 24
ERR_CONVERSION: Final = 25
ERR_DISP: Final = 26
ERR_DUP_DATAREP: Final = 27
ERR_FILE_EXISTS: Final = 28
ERR_FILE_IN_USE: Final = 29
ERR_FILE: Final = 30
ERR_INFO_KEY: Final = 31
ERR_INFO_NOKEY: Final = 32
ERR_INFO_VALUE: Final = 33
ERR_INFO: Final = 34
ERR_IO: Final = 35
ERR_KEYVAL: Final = 36
ERR_LOCKTYPE: Final = 37
ERR_NAME: Final = 38
ERR_NO_MEM: Final = 39
ERR_NOT_SAME: Final = 40
ERR_NO_SPACE: Final = 41
ERR_NO_SUCH_FILE: Final = 42
ERR_PORT: Final = 43
ERR_QUOTA: Final = 44
ERR_READ_ONLY: Final = 45
ERR_RMA_CONFLICT: Final = 46
ERR_RMA_SYNC: Final = 47
ERR_SERVICE: Final = 48
ERR_SIZE: Final = 49
ERR_SPAWN: Final = 50
ERR_UNSUPPORTED_DATAREP: Final = 51
ERR_UNSUPPORTED_OPERATION: Final = 52
ERR_WIN: Final = 53
# 54-67 are the MPI_T_ERR_* classes of the tools interface.
ERR_RMA_RANGE: Final = 68
ERR_RMA_ATTACH: Final = 69
ERR_RMA_FLAVOR: Final = 70
ERR_RMA_SHARED: Final = 71
# 72-73 are MPI_T_ERR_INVALID and MPI_T_ERR_INVALID_NAME.
ERR_PROC_ABORTED: Final = 74
ERR_PROC_FAILED: Final = 75
ERR_PROC_FAILED_PENDING: Final = 76
ERR_REVOKED: Final = 77
ERR_SESSION: Final = 78
ERR_VALUE_TOO_LARGE: Final = 79
ERR_ERRHANDLER: Final = 80
#: The last predefined error class; user-added classes come after it.
ERR_LASTCODE: Final = 92
#: MPI 5's ABI error class; Open MPI 5 has none, so it is ``ERR_LASTCODE`` as in mpi4py on it.
ERR_ABI: Final = ERR_LASTCODE

_MEANINGS: Final[dict[int, tuple[str, str]]] = {
    SUCCESS: ("MPI_SUCCESS", "no errors"),
    ERR_BUFFER: ("MPI_ERR_BUFFER", "invalid buffer pointer"),
    ERR_COUNT: ("MPI_ERR_COUNT", "invalid count argument"),
    ERR_TYPE: ("MPI_ERR_TYPE", "invalid datatype"),
    ERR_TAG: ("MPI_ERR_TAG", "invalid tag"),
    ERR_COMM: ("MPI_ERR_COMM", "invalid communicator"),
    ERR_RANK: ("MPI_ERR_RANK", "invalid rank"),
    ERR_REQUEST: ("MPI_ERR_REQUEST", "invalid request"),
    ERR_ROOT: ("MPI_ERR_ROOT", "invalid root"),
    ERR_GROUP: ("MPI_ERR_GROUP", "invalid group"),
    ERR_OP: ("MPI_ERR_OP", "invalid reduce operation"),
    ERR_TOPOLOGY: ("MPI_ERR_TOPOLOGY", "invalid communicator topology"),
    ERR_DIMS: ("MPI_ERR_DIMS", "invalid topology dimension"),
    ERR_ARG: ("MPI_ERR_ARG", "invalid argument of some other kind"),
    ERR_UNKNOWN: ("MPI_ERR_UNKNOWN", "unknown error"),
    ERR_TRUNCATE: ("MPI_ERR_TRUNCATE", "message truncated"),
    ERR_OTHER: ("MPI_ERR_OTHER", "known error not in list"),
    ERR_INTERN: ("MPI_ERR_INTERN", "internal error"),
    ERR_IN_STATUS: ("MPI_ERR_IN_STATUS", "error code in status"),
    ERR_PENDING: ("MPI_ERR_PENDING", "pending request"),
    ERR_ACCESS: ("MPI_ERR_ACCESS", "invalid access mode"),
    ERR_AMODE: ("MPI_ERR_AMODE", "invalid amode argument"),
    ERR_ASSERT: ("MPI_ERR_ASSERT", "invalid assert argument"),
    ERR_BAD_FILE: ("MPI_ERR_BAD_FILE", "bad file"),
    ERR_BASE: ("MPI_ERR_BASE", "invalid base"),
    ERR_CONVERSION: ("MPI_ERR_CONVERSION", "error in data conversion"),
    ERR_DISP: ("MPI_ERR_DISP", "invalid displacement"),
    ERR_DUP_DATAREP: ("MPI_ERR_DUP_DATAREP", "error duplicating data representation"),
    ERR_FILE_EXISTS: ("MPI_ERR_FILE_EXISTS", "file exists already"),
    ERR_FILE_IN_USE: ("MPI_ERR_FILE_IN_USE", "file already in use"),
    ERR_FILE: ("MPI_ERR_FILE", "invalid file"),
    ERR_INFO_KEY: ("MPI_ERR_INFO_KEY", "invalid key argument for info object"),
    ERR_INFO_NOKEY: ("MPI_ERR_INFO_NOKEY", "unknown key for given info object"),
    ERR_INFO_VALUE: ("MPI_ERR_INFO_VALUE", "invalid value argument for info object"),
    ERR_INFO: ("MPI_ERR_INFO", "invalid info object"),
    ERR_IO: ("MPI_ERR_IO", "input/output error"),
    ERR_KEYVAL: ("MPI_ERR_KEYVAL", "invalid key value"),
    ERR_LOCKTYPE: ("MPI_ERR_LOCKTYPE", "invalid lock"),
    ERR_NAME: ("MPI_ERR_NAME", "invalid name argument"),
    ERR_NO_MEM: ("MPI_ERR_NO_MEM", "out of memory"),
    ERR_NOT_SAME: ("MPI_ERR_NOT_SAME", "objects are not identical"),
    ERR_NO_SPACE: ("MPI_ERR_NO_SPACE", "no space left on device"),
    ERR_NO_SUCH_FILE: ("MPI_ERR_NO_SUCH_FILE", "no such file or directory"),
    ERR_PORT: ("MPI_ERR_PORT", "invalid port"),
    ERR_QUOTA: ("MPI_ERR_QUOTA", "out of quota"),
    ERR_READ_ONLY: ("MPI_ERR_READ_ONLY", "file is read only"),
    ERR_RMA_CONFLICT: ("MPI_ERR_RMA_CONFLICT", "rma conflict during operation"),
    ERR_RMA_SYNC: ("MPI_ERR_RMA_SYNC", "error executing rma sync"),
    ERR_SERVICE: ("MPI_ERR_SERVICE", "unknown service name"),
    ERR_SIZE: ("MPI_ERR_SIZE", "invalid size"),
    ERR_SPAWN: ("MPI_ERR_SPAWN", "could not spawn processes"),
    ERR_UNSUPPORTED_DATAREP: (
        "MPI_ERR_UNSUPPORTED_DATAREP",
        "requested data representation not supported",
    ),
    ERR_UNSUPPORTED_OPERATION: (
        "MPI_ERR_UNSUPPORTED_OPERATION",
        "requested operation not supported",
    ),
    ERR_WIN: ("MPI_ERR_WIN", "invalid window"),
    ERR_RMA_RANGE: ("MPI_ERR_RMA_RANGE", "invalid RMA address range"),
    ERR_RMA_ATTACH: ("MPI_ERR_RMA_ATTACH", "could not attach RMA segment"),
    ERR_RMA_FLAVOR: ("MPI_ERR_RMA_FLAVOR", "invalid type of window"),
    ERR_RMA_SHARED: ("MPI_ERR_RMA_SHARED", "memory cannot be shared"),
    ERR_PROC_ABORTED: ("MPI_ERR_PROC_ABORTED", "operation failed because a process aborted"),
    ERR_PROC_FAILED: ("MPI_ERR_PROC_FAILED", "a process in the operation has failed"),
    ERR_PROC_FAILED_PENDING: (
        "MPI_ERR_PROC_FAILED_PENDING",
        "a process that could match this receive has failed",
    ),
    ERR_REVOKED: ("MPI_ERR_REVOKED", "the communication object has been revoked"),
    ERR_SESSION: ("MPI_ERR_SESSION", "invalid session"),
    ERR_VALUE_TOO_LARGE: ("MPI_ERR_VALUE_TOO_LARGE", "value is too large to store"),
    ERR_ERRHANDLER: ("MPI_ERR_ERRHANDLER", "invalid error handler"),
}


def is_error_class(code: int) -> bool:
    """Whether ``code`` is a predefined error class (``SUCCESS`` included)."""
    return code in _MEANINGS


def error_class_name(code: int) -> str:
    """The C name of a predefined error class, e.g. ``"MPI_ERR_TRUNCATE"``."""
    try:
        return _MEANINGS[code][0]
    except KeyError:
        raise ValueError(
            f"{code} is not a predefined MPI error class "
            f"(classes are {SUCCESS}..{ERR_ERRHANDLER}, with gaps)"
        ) from None


def Get_error_class(errorcode: int) -> int:
    """Convert an error code into an error class.

    Each predefined code is its own class; a code added with ``Add_error_code`` maps to the
    class it was added to, in the error-code table of the process's default instance.
    """
    errorcode = _as_code(errorcode)
    if errorcode in _MEANINGS:
        return errorcode
    added = _added_codes()
    if added is not None:
        errorclass = added.class_of(errorcode)
        if errorclass is not None:
            return errorclass
    return ERR_UNKNOWN


def Get_error_string(errorcode: int) -> str:
    """The error string of an error code or class, Open MPI style (``"MPI_ERR_X: meaning"``).

    A user-added class or code has the string given to ``Add_error_string`` ("" without one).
    """
    errorcode = _as_code(errorcode)
    try:
        name, meaning = _MEANINGS[errorcode]
    except KeyError:
        added = _added_codes()
        if added is not None and added.knows(errorcode):
            return added.string_of(errorcode)
        return f"MPI_ERR_UNKNOWN: unknown error code {errorcode}"
    return f"{name}: {meaning}"


def _added_codes() -> ErrorCodes | None:
    """The user-added error classes and codes of the default instance (None without one)."""
    from .instance import default  # the instance module imports this one

    instance = default()
    return None if instance is None else instance.error_codes


def _as_code(errorcode: object) -> int:
    if isinstance(errorcode, bool) or not isinstance(errorcode, int):
        raise TypeError(f"an MPI error code must be an int, not {type(errorcode).__name__}")
    return int(errorcode)


def _code_of(error: object) -> int | None:
    """The int an ``MPI.Exception`` orders against: an int or another exception's code."""
    try:
        return int(error)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


# mpi4py's name (MPI.Exception); it shadows the builtin inside this module only.
class Exception(builtins.RuntimeError):
    """The exception raised by a failing MPI call; it carries an MPI error code.

    It behaves like mpi4py's: ``int(error)`` is the code, it compares equal to that int,
    ``bool(error)`` is false only for ``SUCCESS``.  ompy adds an optional ``detail`` that says
    what exactly was wrong (which rank, which count, which buffer); ``str(error)`` is the error
    string followed by that detail.
    """

    def __init__(self, ierr: int = SUCCESS, detail: str | None = None) -> None:
        ierr = _as_code(ierr)
        if ierr < SUCCESS:
            ierr = ERR_UNKNOWN
        self.ob_mpi = ierr
        self.detail = detail
        super().__init__(ierr)

    def __eq__(self, error: object) -> bool:
        try:
            return int(error) == self.ob_mpi  # type: ignore[call-overload]
        except (TypeError, ValueError):
            return NotImplemented

    def __ne__(self, error: object) -> bool:
        equal = self.__eq__(error)
        return equal if equal is NotImplemented else not equal

    def __lt__(self, error: object) -> bool:
        other = _code_of(error)
        return NotImplemented if other is None else self.ob_mpi < other

    def __le__(self, error: object) -> bool:
        other = _code_of(error)
        return NotImplemented if other is None else self.ob_mpi <= other

    def __gt__(self, error: object) -> bool:
        other = _code_of(error)
        return NotImplemented if other is None else self.ob_mpi > other

    def __ge__(self, error: object) -> bool:
        other = _code_of(error)
        return NotImplemented if other is None else self.ob_mpi >= other

    def __hash__(self) -> int:
        return hash(self.ob_mpi)

    def __bool__(self) -> bool:
        return self.ob_mpi != SUCCESS

    def __int__(self) -> int:
        return self.ob_mpi

    def __repr__(self) -> str:
        return f"MPI.Exception({self.ob_mpi})"

    def __str__(self) -> str:
        # With a detail, the error class's name and the detail: the class's generic meaning
        # ("known error not in list", "invalid communicator") says less than the detail does.
        if self.detail:
            if is_error_class(self.ob_mpi):
                return f"{error_class_name(self.ob_mpi)}: {self.detail}"
            return f"{self.Get_error_string() or f'error code {self.ob_mpi}'}: {self.detail}"
        return self.Get_error_string()

    def __reduce__(self):
        return (type(self), (self.ob_mpi, self.detail))

    def Get_error_code(self) -> int:
        """Error code."""
        return self.ob_mpi

    def Get_error_class(self) -> int:
        """Error class."""
        return Get_error_class(self.ob_mpi)

    def Get_error_string(self) -> str:
        """Error string."""
        return Get_error_string(self.ob_mpi)

    error_code = GetProperty(Get_error_code, "Error code.")
    error_class = GetProperty(Get_error_class, "Error class.")
    error_string = GetProperty(Get_error_string, "Error string.")


class PeerFailedError(Exception, Consequential):
    """The MPI error of a member whose call failed because another member failed first.

    It is an ``MPI.Exception`` like any other; being :class:`Consequential` lets the launcher
    report the member that failed first when both errors end the job.
    """


#: Every ``ERR_*`` name with its value, for ``from ompy import MPI`` to re-export.
ERROR_CLASSES: Final[dict[str, int]] = {
    name: value
    for name, value in globals().items()
    if (name.startswith("ERR_") or name == "SUCCESS") and isinstance(value, int)
}
