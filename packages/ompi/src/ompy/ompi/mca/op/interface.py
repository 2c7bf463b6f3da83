"""The op framework's interfaces: what a reduction component provides.

Open MPI splits reductions into the MPI object (``ompi/op``) and the ``op`` framework, whose
components supply the loops for each (predefined operation, datatype) pair; an accelerated
component may cover a few pairs and leave the rest to another.  ompy does the same: a component
answers ``query`` with an :class:`OpModule`, and the framework's base asks the modules, best
priority first, for a :class:`Kernel` for each pair the first time that pair is used.

The kernel contract, which every component implements and every caller (``Op.Reduce_local``,
the coll and osc components) relies on::

    kernel(inmem, inoutmem, count)  ->  inoutmem[i] = inmem[i] op inoutmem[i],  i < count

``inmem`` and ``inoutmem`` are C-contiguous objects exporting the buffer protocol (normally flat
byte memoryviews) holding at least ``count`` elements of the datatype the kernel was made for;
``inoutmem`` is writable.  They may be the very same memory (``MPI.IN_PLACE``); they never
overlap partially.  A kernel works in place: it must not allocate temporaries proportional to
``count``.  The base has already checked that MPI defines the operation on the datatype, so a
module need not repeat that check; it answers ``None`` for pairs it does not implement.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, TypeAlias

from ompy.opal.mca import Component, Offer

from ...datatype import Datatype

if TYPE_CHECKING:  # collections.abc.Buffer from Python 3.12 on
    from typing_extensions import Buffer

#: The version of this interface; components declare the version they were written against.
INTERFACE_VERSION = (1, 0)

#: ``kernel(inmem, inoutmem, count)``: combine ``count`` elements of ``inmem`` into ``inoutmem``
#: (any objects exporting the buffer protocol, see above).
Kernel: TypeAlias = Callable[["Buffer", "Buffer", int], None]


class Intrinsic(enum.IntEnum):
    """MPI's predefined operations; the values are Open MPI's Fortran handles (``MPI_SUM`` = 3).

    ``OP_NULL`` (0) is not an operation and has no member here.
    """

    MAX = 1
    MIN = 2
    SUM = 3
    PROD = 4
    LAND = 5
    BAND = 6
    LOR = 7
    BOR = 8
    LXOR = 9
    BXOR = 10
    MAXLOC = 11
    MINLOC = 12
    REPLACE = 13
    NO_OP = 14

    @property
    def mpi_name(self) -> str:
        """The C name, e.g. ``"MPI_SUM"``."""
        return f"MPI_{self.name}"


class OpModule(abc.ABC):
    """One component's kernels for this process; :meth:`kernel` is its whole contract."""

    @abc.abstractmethod
    def kernel(self, op: Intrinsic, datatype: Datatype) -> Kernel | None:
        """The kernel computing ``op`` on elements of ``datatype``, or ``None`` to pass.

        Called once per (operation, datatype) pair; the base caches the answer, so a module may
        do setup work here (bind functions, size scratch space) to keep the kernel itself short.
        """


class OpComponent(Component[None, OpModule]):
    """Base class of op components: ``query`` offers an :class:`OpModule` for the process."""

    framework: ClassVar[str] = "op"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: None = None) -> Offer[OpModule] | None:
        """Offer a module (``context`` is ``None``: the choice is made once per process)."""
        return None
