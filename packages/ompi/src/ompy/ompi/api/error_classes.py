"""``MPI.Add_error_class`` and friends: error classes, codes and strings a program adds.

They act on the error-code table of the process's default instance
(:class:`~ompy.ompi.error_codes.ErrorCodes`, where the rules are), which ``MPI.Get_error_class``
and ``MPI.Get_error_string`` (and ``MPI.Exception``'s methods) read too.
"""

from __future__ import annotations

from ..instance import current
from .checks import as_int

__all__ = [
    "Add_error_class",
    "Add_error_code",
    "Add_error_string",
    "Remove_error_class",
    "Remove_error_code",
    "Remove_error_string",
]


def Add_error_class() -> int:
    """Add an error class to the known error classes (``LASTUSEDCODE`` becomes it)."""
    return current("MPI.Add_error_class").error_codes.add_class()


def Add_error_code(errorclass: int) -> int:
    """Add an error code to an error class."""
    call = "MPI.Add_error_code"
    errorclass = as_int(errorclass, f"{call}: errorclass")
    return current(call).error_codes.add_code(errorclass, call)


def Add_error_string(errorcode: int, string: str) -> None:
    """Associate an error string with an error class or code."""
    call = "MPI.Add_error_string"
    errorcode = as_int(errorcode, f"{call}: errorcode")
    current(call).error_codes.add_string(errorcode, string, call)


def Remove_error_class(errorclass: int) -> None:
    """Remove an error class (its codes and string removed first)."""
    call = "MPI.Remove_error_class"
    errorclass = as_int(errorclass, f"{call}: errorclass")
    current(call).error_codes.remove_class(errorclass, call)


def Remove_error_code(errorcode: int) -> None:
    """Remove an error code (its string removed first)."""
    call = "MPI.Remove_error_code"
    errorcode = as_int(errorcode, f"{call}: errorcode")
    current(call).error_codes.remove_code(errorcode, call)


def Remove_error_string(errorcode: int) -> None:
    """Remove the error string of an error class or code."""
    call = "MPI.Remove_error_string"
    errorcode = as_int(errorcode, f"{call}: errorcode")
    current(call).error_codes.remove_string(errorcode, call)
