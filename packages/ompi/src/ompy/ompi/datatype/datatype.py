"""The :class:`Datatype` handle and the layout it refers to.

A datatype describes the memory of one element: its ``size`` (bytes of data), its ``extent``
(the stride from one element to the next, padding included) and the basic elements it is made
of (``Get_elements`` counts those).  Every element type here is backed by a numpy dtype, so the
convertor and the reduction operations can view a buffer as a typed array without a table of
their own.

Like mpi4py's, a :class:`Datatype` object is a *handle*: ``Datatype(t)`` refers to the same
datatype as ``t``, ``Free()`` turns the handle into ``DATATYPE_NULL``, and equality is identity
of the datatype referred to.
"""

from __future__ import annotations

from typing import Any, Final, Self

import attrs
import numpy as np

from ..attributes import AttributeSet, CachesAttributes, process_keyvals
from ..constants import UNDEFINED
from ..errors import ERR_TYPE
from ..errors import Exception as MPIException
from ..handle import Handle


@attrs.define(eq=False)
class Layout:
    """What a datatype handle refers to; one object per datatype (identity is equality).

    Only ``name`` changes after creation (``Set_name``), and it changes for every handle.
    """

    #: The MPI name, e.g. ``"MPI_DOUBLE"``; ``Set_name`` replaces it on the handle's layout.
    name: str
    #: numpy view of one element (a structured dtype for the pair types).
    dtype: np.dtype
    #: Bytes of data per element (padding excluded).
    size: int
    #: Byte sizes of the basic elements one element is made of, in memory order.
    basic_sizes: tuple[int, ...]
    #: The single-character code (``"d"``, ``"i"``, ...), or ``""`` when there is none.
    typechar: str
    predefined: bool
    #: The attribute name in ``MPI`` of a predefined datatype (``"DOUBLE"``), used to pickle it.
    key: str = ""
    #: The attributes cached on the datatype (``Datatype.Set_attr``).
    attributes: AttributeSet = attrs.field(factory=AttributeSet, repr=False)
    #: The predefined datatype this one duplicates (``Dup``), by which it pickles.
    dup_of: Datatype | None = attrs.field(default=None, repr=False)

    @property
    def extent(self) -> int:
        return self.dtype.itemsize

    @property
    def true_extent(self) -> int:
        """Bytes from the first to the last byte of data (trailing padding excluded)."""
        if self.dtype.fields is None:
            return self.dtype.itemsize
        return max(offset + sub.itemsize for sub, offset, *_ in self.dtype.fields.values())

    @property
    def contiguous(self) -> bool:
        """Whether ``count`` elements are ``count * size`` bytes of data without gaps."""
        return self.size == self.extent


def null_datatype_error(what: str = "operation") -> MPIException:
    return MPIException(
        ERR_TYPE,
        f"{what} on DATATYPE_NULL (a null or freed datatype); pass a predefined datatype such as "
        "MPI.DOUBLE or one made with a Create_* call",
    )


class Datatype(CachesAttributes, Handle, referent="_layout"):
    """Datatype object."""

    __slots__ = ("_layout",)

    _layout: Layout | None
    _attr_kind = "Datatype"

    @classmethod
    def _of(cls, layout: Layout) -> Self:
        handle = cls.__new__(cls)
        handle._layout = layout
        return handle

    # -- handle semantics (equality, hash, truth, pickling, integers come from Handle) ---

    def __repr__(self) -> str:
        if self._layout is None:
            return "<Datatype DATATYPE_NULL>"
        return f"<Datatype {self.Get_name() or 'unnamed'}>"

    def _predefined_handle(self) -> Datatype | None:
        named = self._predefined_of()
        return named[1] if named is not None else None  # type: ignore[return-value]

    def _reduce_user(self) -> tuple[Any, ...]:
        """A duplicate of a predefined datatype travels as one (mpi4py's combiner form)."""
        layout = self._layout
        if layout is None or layout.dup_of is None:
            return super()._reduce_user()  # type: ignore[return-value]
        return (_duplicate, (layout.dup_of,))

    # -- attributes (the methods come from CachesAttributes) ---------------------------------

    def _attributes(self, call: str) -> AttributeSet:
        layout = self._layout
        if layout is None:
            raise null_datatype_error(call)
        return layout.attributes

    def _attr_handle(self) -> tuple[Any, Any]:
        return _callback_handle(self.layout)

    @property
    def layout(self) -> Layout:
        """The layout this handle refers to; an MPI error with ``ERR_TYPE`` for a null handle."""
        layout = self._layout
        if layout is None:
            raise null_datatype_error()
        return layout

    # -- size and extent ----------------------------------------------------------------------

    def Get_size(self) -> int:
        """Return the number of bytes occupied by entries in the datatype."""
        return self.layout.size

    def Get_extent(self) -> tuple[int, int]:
        """Return lower bound and extent of datatype."""
        return 0, self.layout.extent

    def Get_true_extent(self) -> tuple[int, int]:
        """Return the true lower bound and extent of a datatype."""
        return 0, self.layout.true_extent

    @property
    def size(self) -> int:
        """Size (in bytes)."""
        return self.Get_size()

    @property
    def extent(self) -> int:
        """Extent."""
        return self.layout.extent

    @property
    def lb(self) -> int:
        """Lower bound."""
        return self.Get_extent()[0]

    @property
    def ub(self) -> int:
        """Upper bound."""
        lb, extent = self.Get_extent()
        return lb + extent

    @property
    def true_extent(self) -> int:
        """True extent."""
        return self.layout.true_extent

    @property
    def true_lb(self) -> int:
        """True lower bound."""
        return self.Get_true_extent()[0]

    @property
    def true_ub(self) -> int:
        """True upper bound."""
        lb, extent = self.Get_true_extent()
        return lb + extent

    # -- names and codes ----------------------------------------------------------------------

    def Get_name(self) -> str:
        """Get the print name for this datatype."""
        return self.layout.name

    def Set_name(self, name: str) -> None:
        """Set the print name for this datatype."""
        layout = self.layout
        if not isinstance(name, str):
            raise TypeError(f"a datatype name must be a str, not {type(name).__name__}")
        layout.name = name[: MAX_NAME - 1]

    @property
    def name(self) -> str:
        """Print name."""
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    @property
    def typechar(self) -> str:
        """Character code."""
        return self.layout.typechar

    @property
    def typestr(self) -> str:
        """Type string (numpy's array-interface ``typestr``)."""
        return self.layout.dtype.str

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of one element (an ompy extension; mpi4py has no such attribute)."""
        return self.layout.dtype

    @property
    def is_named(self) -> bool:
        """Is a named datatype."""
        return self.layout.predefined

    @property
    def is_predefined(self) -> bool:
        """Is a predefined datatype."""
        return self._layout is None or self._layout.predefined

    def tocode(self) -> str:
        """Get character code or type string from predefined MPI datatype."""
        layout = self.layout
        if layout.typechar:
            return layout.typechar
        raise ValueError(f"the datatype {layout.name} has no character code")

    @classmethod
    def fromcode(cls, code: str) -> Datatype:
        """Get predefined MPI datatype from character code or type string."""
        from .predefined import from_code

        return from_code(code)

    # -- life cycle -----------------------------------------------------------------------------

    def Commit(self) -> Datatype:
        """Commit the datatype."""
        self.layout  # noqa: B018
        return self

    def Dup(self) -> Self:
        """Duplicate a datatype (its attributes go through their copy callbacks)."""
        layout = self.layout
        name = f"Dup {layout.name}"[: MAX_NAME - 1]
        base = layout.dup_of if layout.dup_of is not None else self._predefined_handle()
        copy = attrs.evolve(
            layout, name=name, predefined=False, key="", attributes=AttributeSet(), dup_of=base
        )
        if layout.attributes:
            table = process_keyvals()
            try:
                layout.attributes.copy_to(
                    copy.attributes, table, _callback_handle(layout), "Datatype.Dup"
                )
            except BaseException:
                copy.attributes.delete_all(table, _callback_handle(copy))
                raise
        return type(self)._of(copy)

    def Free(self) -> None:
        """Free the datatype (its attributes are deleted, the last set first)."""
        layout = self.layout
        if layout.predefined:
            raise MPIException(
                ERR_TYPE, f"{layout.name} is a predefined datatype and cannot be freed"
            )
        if layout.attributes:
            layout.attributes.delete_all(process_keyvals(), _callback_handle(layout))
        self._layout = None

    def _free(self) -> None:
        self.Free()

    # -- counting -------------------------------------------------------------------------------

    def count_of(self, nbytes: int) -> int:
        """Whole elements in ``nbytes`` received bytes, or ``UNDEFINED`` if not a whole number."""
        size = self.layout.size
        if size == 0:
            return 0 if nbytes == 0 else UNDEFINED
        count, rest = divmod(nbytes, size)
        return UNDEFINED if rest else count

    def elements_of(self, nbytes: int) -> int:
        """Basic elements in ``nbytes`` received bytes, or ``UNDEFINED`` (``Get_elements``)."""
        layout = self.layout
        if layout.size == 0:
            return 0 if nbytes == 0 else UNDEFINED
        whole, rest = divmod(nbytes, layout.size)
        elements = whole * len(layout.basic_sizes)
        for basic in layout.basic_sizes:
            if rest == 0:
                break
            if rest < basic:
                return UNDEFINED
            rest -= basic
            elements += 1
        return elements


def _duplicate(datatype: Datatype) -> Datatype:
    """A new duplicate of ``datatype`` (what a pickled duplicate becomes)."""
    return datatype.Dup()


def _callback_handle(layout: Layout) -> tuple[Any, Any]:
    """A temporary handle to ``layout`` for attribute callbacks, and what nulls it afterwards."""

    def make() -> Datatype:
        return Datatype._of(layout)

    def release(handle: Datatype) -> None:
        handle._layout = None

    return make, release


#: Longest name a datatype keeps, terminator included (``MPI_MAX_OBJECT_NAME``).
MAX_NAME: Final = 64
