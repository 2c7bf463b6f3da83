"""What every MPI handle class shares: comparison by referent, hashing, truth.

An mpi4py handle is a small Python object that names an MPI object; two handles are equal when
they name the same object (``MPI.Comm(MPI.COMM_WORLD) == MPI.COMM_WORLD``), and a null handle
(``COMM_NULL``, ``DATATYPE_NULL``, ``GROUP_NULL``, ``OP_NULL``) is false.  Communicators,
datatypes, groups and operations all follow that rule, so it lives here once.  Each handle class
names the slot that holds its referent; subclasses (``Intracomm`` of ``Comm``) compare with their
root class, so an ``Intracomm`` equals the ``Comm`` handle of the same communicator.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, ClassVar


class Handle:
    """Base of the handle classes; ``class Comm(Handle, referent="_c")`` opts in."""

    __slots__ = ()

    _handle_root: ClassVar[type]
    _referent_of: ClassVar[Callable[[Any], object]]

    def __init_subclass__(cls, *, referent: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if referent is not None:
            cls._handle_root = cls
            cls._referent_of = staticmethod(operator.attrgetter(referent))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, self._handle_root):
            return NotImplemented
        return self._referent_of(self) is self._referent_of(other)

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, self._handle_root):
            return NotImplemented
        return self._referent_of(self) is not self._referent_of(other)

    def __hash__(self) -> int:
        return id(self._referent_of(self))

    def __bool__(self) -> bool:
        return self._referent_of(self) is not None
