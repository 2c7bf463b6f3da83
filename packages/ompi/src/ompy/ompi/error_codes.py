"""The error classes, codes and strings a process adds (``MPI.Add_error_class`` and friends).

MPI lets a library define its own error classes, codes within them, and strings for both.  They
are per-process state, so each :class:`~ompy.ompi.instance.Instance` holds one
:class:`ErrorCodes` table.  Numbering follows Open MPI: classes and codes share one sequence
that starts after ``ERR_LASTCODE``, and the ``LASTUSEDCODE`` attribute is the last number handed
out.  Removing (MPI 4.1) never gives a number back, so ``LASTUSEDCODE`` only grows and a stale
code can never alias a new one.  A class can be removed only once it has no codes and no
string, a code only once it has no string: the order MPI 4.1 prescribes (strings, codes, then
the class).
"""

from __future__ import annotations

import threading

import attrs

from .constants import MAX_ERROR_STRING
from .errors import ERR_ARG, ERR_LASTCODE, is_error_class
from .errors import Exception as MPIException


@attrs.define(eq=False)
class ErrorCodes:
    """One process's user-added error classes and codes, and the strings attached to them."""

    #: The last class or code handed out (the ``LASTUSEDCODE`` attribute).
    last_used: int = ERR_LASTCODE
    #: Each user-added class -> the codes added to it (a class is also a code of itself).
    classes: dict[int, set[int]] = attrs.field(factory=dict)
    #: Each user-added code (not class) -> its class.
    codes: dict[int, int] = attrs.field(factory=dict)
    #: Strings given to ``Add_error_string``, by class or code.
    strings: dict[int, str] = attrs.field(factory=dict)
    lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)

    # -- queries -------------------------------------------------------------------------------

    def knows(self, code: int) -> bool:
        """Whether ``code`` is a user-added class or code that was not removed."""
        return code in self.classes or code in self.codes

    def class_of(self, code: int) -> int | None:
        """The class of a user-added class or code (None if it is not one)."""
        if code in self.classes:
            return code
        return self.codes.get(code)

    def string_of(self, code: int) -> str:
        """The string of a user-added class or code ("" when none was added)."""
        return self.strings.get(code, "")

    # -- adding --------------------------------------------------------------------------------

    def add_class(self) -> int:
        """A new error class."""
        with self.lock:
            self.last_used += 1
            self.classes[self.last_used] = set()
            return self.last_used

    def add_code(self, errorclass: int, call: str) -> int:
        """A new error code in ``errorclass`` (a predefined class or a user-added one)."""
        with self.lock:
            if errorclass not in self.classes and not (
                is_error_class(errorclass) and errorclass != 0
            ):
                raise MPIException(
                    ERR_ARG,
                    f"{call}: {errorclass} is not an error class (a predefined class other "
                    "than SUCCESS, or one returned by Add_error_class)",
                )
            self.last_used += 1
            self.codes[self.last_used] = errorclass
            if errorclass in self.classes:
                self.classes[errorclass].add(self.last_used)
            return self.last_used

    def add_string(self, code: int, string: str, call: str) -> None:
        """Attach ``string`` to a user-added class or code (replacing an earlier one)."""
        if not isinstance(string, str):
            raise TypeError(f"{call}: the error string must be a str, not {type(string).__name__}")
        if len(string.encode()) >= MAX_ERROR_STRING:
            raise MPIException(
                ERR_ARG,
                f"{call}: the error string is {len(string.encode())} bytes long; "
                f"MAX_ERROR_STRING ({MAX_ERROR_STRING}) allows at most {MAX_ERROR_STRING - 1}",
            )
        with self.lock:
            self._user_added(code, call)
            self.strings[code] = string

    # -- removing (MPI 4.1) --------------------------------------------------------------------

    def remove_class(self, errorclass: int, call: str) -> None:
        """Forget a user-added class; its codes and string must be gone already."""
        with self.lock:
            if errorclass not in self.classes:
                raise MPIException(ERR_ARG, f"{call}: {errorclass} is not a user-added class")
            if self.classes[errorclass]:
                raise MPIException(
                    ERR_ARG,
                    f"{call}: class {errorclass} still has codes "
                    f"{sorted(self.classes[errorclass])}; remove them first",
                )
            self._no_string(errorclass, call)
            del self.classes[errorclass]

    def remove_code(self, code: int, call: str) -> None:
        """Forget a user-added code; its string must be gone already."""
        with self.lock:
            if code not in self.codes:
                raise MPIException(ERR_ARG, f"{call}: {code} is not a user-added error code")
            self._no_string(code, call)
            errorclass = self.codes.pop(code)
            if errorclass in self.classes:
                self.classes[errorclass].discard(code)

    def remove_string(self, code: int, call: str) -> None:
        """Detach the string of a user-added class or code."""
        with self.lock:
            self._user_added(code, call)
            if code not in self.strings:
                raise MPIException(ERR_ARG, f"{call}: {code} has no error string to remove")
            del self.strings[code]

    # -- checks --------------------------------------------------------------------------------

    def _user_added(self, code: int, call: str) -> None:
        if not self.knows(code):
            what = "a predefined" if is_error_class(code) else "not a user-added"
            raise MPIException(
                ERR_ARG,
                f"{call}: {code} is {what} error class or code; only classes and codes "
                "from Add_error_class/Add_error_code can have their strings changed",
            )

    def _no_string(self, code: int, call: str) -> None:
        if code in self.strings:
            raise MPIException(
                ERR_ARG, f"{call}: {code} still has an error string; Remove_error_string first"
            )
