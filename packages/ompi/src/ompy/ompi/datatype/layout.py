"""What a datatype handle refers to: its typemap (an opal ``Description``) and its MPI state.

Every datatype, predefined or derived, is one :class:`Layout`: the flattened typemap the opal
engine packs and unpacks with, the envelope that says how it was made (``Get_envelope``), its
name, whether it is committed, and the codes mpi4py gives it (``typechar``, ``typestr``,
``tocode``).  Size, extent and bounds are read from the description once, when the layout is
made, and kept as plain attributes: the message path asks for the extent of every buffer.

A layout is shared by every handle to it (``Datatype(t)`` is the same datatype as ``t``).  As in
MPI, a program holds *references* to it: one from the call that made it, one more for each
handle ``Get_contents``/``decode`` return; ``Free`` gives one back and nulls the handle it was
called on, and the datatype is freed (its attributes deleted, any other handle to it refused)
when the last reference is given back.  Datatypes made from it keep their own copy of its
typemap, so they are unaffected.
"""

from __future__ import annotations

from typing import Final

import attrs
import numpy as np

from ompy.opal.datatype.description import Description

from ..attributes import AttributeSet
from ..errors import ERR_TYPE
from ..errors import Exception as MPIException
from .envelope import COMBINER_NAMED, COMBINER_VALUE_INDEX, PREDEFINED_COMBINERS, Envelope

#: Longest name a datatype keeps, terminator included (``MPI_MAX_OBJECT_NAME``).
MAX_NAME: Final = 64


@attrs.define(eq=False)
class Layout:
    """One datatype (identity is equality): its typemap, envelope, name, codes and state."""

    #: The MPI name (``"MPI_DOUBLE"``; ``""`` for a new derived datatype), set by ``Set_name``.
    name: str
    #: The flattened typemap the convertor packs and unpacks with.
    description: Description
    #: How the datatype was made (``Get_envelope``/``Get_contents``).
    envelope: Envelope
    #: numpy view of one element: the basic's dtype when every element is of one basic kind,
    #: a structured dtype for the value/index pairs, raw bytes (``V<extent>``) otherwise.
    dtype: np.dtype
    #: What ``tocode()`` returns (mpi4py's character code or type string); ``""`` when none.
    code: str = ""
    #: mpi4py's ``typechar``: ``"V"`` when the datatype has no character code.
    typechar: str = "V"
    #: mpi4py's ``typestr``: ``""`` means ``V<extent>`` (raw bytes).
    typestr: str = ""
    #: The attribute name in ``MPI`` of a named datatype (``"DOUBLE"``); for a Fortran
    #: parametrized type (``Create_f90_real``) the sized type it stands for (``"REAL8"``).
    key: str = ""
    committed: bool = False
    #: References the program holds (see the module docstring); 0 once freed.
    refs: int = 1
    #: The attributes cached on the datatype (``Datatype.Set_attr``).
    attributes: AttributeSet = attrs.field(factory=AttributeSet, repr=False)
    #: For a derived datatype, the predefined one all of it is made of (a vector of
    #: ``DOUBLE_INT`` pairs: ``DOUBLE_INT``), if there is one; see :meth:`element_layout`.
    element: Layout | None = attrs.field(default=None, repr=False)
    # Read from the description once (the message path asks for them on every call).
    size: int = attrs.field(init=False)
    extent: int = attrs.field(init=False)
    lb: int = attrs.field(init=False)
    #: A named predefined datatype whose elements are exactly their bytes (no value/index
    #: pair's padding): what a reduction hands the op kernels as it is, read on every call.
    plain_named: bool = attrs.field(init=False)
    #: Whether one element covers some byte twice (computed on first use).
    _self_overlap: bool | None = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        description = self.description
        self.size = int(description.size)
        self.lb = int(description.lb)
        self.extent = int(description.ub) - self.lb
        self.plain_named = (
            self.envelope.combiner == COMBINER_NAMED and self.size == self.extent and self.lb == 0
        )

    # -- bounds -------------------------------------------------------------------------------

    @property
    def ub(self) -> int:
        return self.lb + self.extent

    @property
    def true_lb(self) -> int:
        return int(self.description.true_lb)

    @property
    def true_extent(self) -> int:
        """Bytes from the first to the last byte of data (padding at either end excluded)."""
        return int(self.description.true_ub) - int(self.description.true_lb)

    @property
    def contiguous(self) -> bool:
        """Whether ``count`` elements are ``count * size`` bytes of data from the element's
        start, without gaps (then a buffer's bytes are the message itself)."""
        description = self.description
        return bool(description.is_contiguous) and int(description.true_lb) == 0

    # -- kinds --------------------------------------------------------------------------------

    @property
    def combiner(self) -> int:
        return self.envelope.combiner

    @property
    def predefined(self) -> bool:
        """A named predefined datatype (``MPI.DOUBLE``, not a duplicate or a derived one)."""
        return self.envelope.combiner == COMBINER_NAMED

    @property
    def is_predefined(self) -> bool:
        """mpi4py's ``is_predefined``: named, or a parametrized Fortran or value/index type."""
        return self.envelope.combiner in PREDEFINED_COMBINERS

    def overlaps(self, count: int) -> bool:
        """Whether ``count`` elements cover some byte twice (data cannot be received or
        unpacked into such a layout).  One element's answer is kept; more elements only need
        the full check when consecutive elements come closer than their data's span."""
        if count <= 0:
            return False
        if self._self_overlap is None:
            self._self_overlap = bool(self.description.overlaps(1))
        if self._self_overlap:
            return True
        if count <= 1 or abs(self.extent) >= self.true_extent:
            return False
        return bool(self.description.overlaps(count))

    def element_layout(self) -> Layout | None:
        """The predefined datatype every element of this one is made of, or None (mixed, or
        no data): itself for a predefined one.  A reduction with a predefined operation
        applies that operation to these elements, so this is what it checks and computes on."""
        if self.envelope.combiner in (COMBINER_NAMED, COMBINER_VALUE_INDEX):
            return self
        return self.element

    @property
    def freed(self) -> bool:
        return self.refs <= 0

    def effective_typestr(self) -> str:
        return self.typestr or f"V{max(self.extent, 0)}"


def null_datatype_error(what: str = "operation") -> MPIException:
    return MPIException(
        ERR_TYPE,
        f"{what} on DATATYPE_NULL (a null or freed datatype); pass a predefined datatype such as "
        "MPI.DOUBLE or one made with a Create_* call",
    )


def freed_datatype_error(layout: Layout, what: str = "operation") -> MPIException:
    name = f" {layout.name}" if layout.name else ""
    return MPIException(
        ERR_TYPE,
        f"{what} on the datatype{name}, which was freed (Free() was called on it); make it "
        "again, or keep it until it is no longer used",
    )
