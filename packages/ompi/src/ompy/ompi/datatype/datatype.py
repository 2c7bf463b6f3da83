"""The :class:`Datatype` handle: queries, names, codes, envelope, life cycle and pickling.

A datatype describes the memory of one element: its typemap (an opal ``Description`` held by
the :class:`~ompy.ompi.datatype.layout.Layout` the handle refers to), its ``size`` (bytes of
data), its bounds and ``extent`` (the stride from one element to the next).  The constructors
live in :mod:`.constructors`, Pack/Unpack in :mod:`.packing`, the Fortran and value/index
lookups in :mod:`.matching`; this class puts them together.

Like mpi4py's, a :class:`Datatype` object is a *handle*: ``Datatype(t)`` refers to the same
datatype as ``t``, ``Free()`` turns the handle into ``DATATYPE_NULL``, and equality is identity
of the datatype referred to.  A derived datatype pickles as the call that made it (its
envelope, through :meth:`Datatype.decode`), so it travels to another process, as in mpi4py.
"""

from __future__ import annotations

from typing import Any, Self

import attrs

from ..attributes import AttributeSet, CachesAttributes, process_keyvals
from ..constants import UNDEFINED
from ..errors import ERR_TYPE
from ..errors import Exception as MPIException
from ..handle import Handle
from .constructors import Constructors
from .envelope import (
    COMBINER_DUP,
    COMBINER_NAMED,
    COMBINER_NAMES,
    COMBINER_VALUE_INDEX,
    Envelope,
    decode_params,
)
from .layout import MAX_NAME, Layout, freed_datatype_error, null_datatype_error
from .matching import Matching
from .packing import Packing

__all__ = ["MAX_NAME", "Datatype", "Layout", "null_datatype_error", "require_committed"]


class Datatype(Constructors, Matching, Packing, CachesAttributes, Handle, referent="_layout"):
    """Datatype object."""

    __slots__ = ("_layout",)

    _layout: Layout | None
    _attr_kind = "Datatype"

    @classmethod
    def _of(cls, layout: Layout) -> Self:
        handle = cls.__new__(cls)
        handle._layout = layout
        return handle

    # -- handle semantics (equality, hash, truth, integers come from Handle) -----------------

    def __repr__(self) -> str:
        layout = self._layout
        if layout is None:
            return "<Datatype DATATYPE_NULL>"
        return f"<Datatype {layout.name or 'unnamed'}>"

    @property
    def layout(self) -> Layout:
        """The layout this handle refers to; an ``ERR_TYPE`` error if null or freed."""
        layout = self._layout
        if layout is None:
            raise null_datatype_error()
        if layout.refs <= 0:
            raise freed_datatype_error(layout)
        return layout

    def _checked(self, call: str) -> Layout:
        layout = self._layout
        if layout is None:
            raise null_datatype_error(call)
        if layout.refs <= 0:
            raise freed_datatype_error(layout, call)
        return layout

    # -- attributes (the methods come from CachesAttributes) ---------------------------------

    def _attributes(self, call: str) -> AttributeSet:
        return self._checked(call).attributes

    def _attr_handle(self) -> tuple[Any, Any]:
        return Datatype._lend(self.layout)

    # -- size and extent ----------------------------------------------------------------------

    def Get_size(self) -> int:
        """Return the number of bytes occupied by entries in the datatype."""
        return self._checked("Get_size").size

    def Get_extent(self) -> tuple[int, int]:
        """Return lower bound and extent of datatype."""
        layout = self._checked("Get_extent")
        return layout.lb, layout.extent

    def Get_true_extent(self) -> tuple[int, int]:
        """Return the true lower bound and extent of a datatype."""
        layout = self._checked("Get_true_extent")
        return layout.true_lb, layout.true_extent

    @property
    def size(self) -> int:
        """Size (in bytes)."""
        return self.Get_size()

    @property
    def extent(self) -> int:
        """Extent."""
        return self._checked("extent").extent

    @property
    def lb(self) -> int:
        """Lower bound."""
        return self._checked("lb").lb

    @property
    def ub(self) -> int:
        """Upper bound."""
        return self._checked("ub").ub

    @property
    def true_extent(self) -> int:
        """True extent."""
        return self._checked("true_extent").true_extent

    @property
    def true_lb(self) -> int:
        """True lower bound."""
        return self._checked("true_lb").true_lb

    @property
    def true_ub(self) -> int:
        """True upper bound."""
        layout = self._checked("true_ub")
        return layout.true_lb + layout.true_extent

    # -- decoding -------------------------------------------------------------------------------

    def Get_envelope(self) -> tuple[int, int, int, int, int]:
        """Return the number of input arguments used to create a datatype."""
        return self._checked("Get_envelope").envelope.sizes()

    @property
    def envelope(self) -> tuple[int, int, int, int, int]:
        """Envelope."""
        return self.Get_envelope()

    def Get_contents(self) -> tuple[list[int], list[int], list[int], list[Datatype]]:
        """Return the input arguments used to create a datatype."""
        envelope = self._checked("Get_contents").envelope
        if envelope.combiner == COMBINER_NAMED:
            raise MPIException(
                ERR_TYPE,
                f"Get_contents on the named datatype {self.Get_name()}: a predefined datatype "
                "has no contents (check Get_envelope()'s combiner for COMBINER_NAMED first)",
            )
        return (
            list(envelope.integers),
            list(envelope.addresses),
            envelope.count_list(),
            [_reference(datatype) for datatype in envelope.datatypes],
        )

    @property
    def contents(self) -> tuple[list[int], list[int], list[int], list[Datatype]]:
        """Contents."""
        return self.Get_contents()

    def decode(self) -> tuple[Datatype, str, dict[str, Any]]:
        """Convenience method for decoding a datatype.

        Returns ``(base, combiner name, keyword arguments)``: the datatype the constructor was
        called on (``DATATYPE_NULL`` for ``Create_struct`` and the class methods), and what
        ``Create_<combiner>(**arguments)`` on it needs to make an equal datatype again.
        """
        envelope = self._checked("decode").envelope
        name = COMBINER_NAMES[envelope.combiner]
        if envelope.combiner == COMBINER_NAMED:
            return self, name, {}
        params = decode_params(envelope)
        for key in ("datatypes", "value", "index"):
            if key in params:
                value = params[key]
                params[key] = (
                    [_reference(d) for d in value] if isinstance(value, list) else _reference(value)
                )
        if len(envelope.datatypes) == 1:
            return _reference(envelope.datatypes[0]), name, params
        from .predefined import DATATYPE_NULL  # the predefined datatypes are made of this class

        return DATATYPE_NULL, name, params

    @property
    def combiner(self) -> int:
        """Combiner."""
        return self._checked("combiner").envelope.combiner

    @property
    def is_named(self) -> bool:
        """Is a named datatype."""
        return self._checked("is_named").envelope.combiner == COMBINER_NAMED

    @property
    def is_predefined(self) -> bool:
        """Is a predefined datatype."""
        if self._layout is None:
            return True
        return self._checked("is_predefined").is_predefined

    # -- names and codes ----------------------------------------------------------------------

    def Get_name(self) -> str:
        """Get the print name for this datatype."""
        if self._layout is None:
            return "MPI_DATATYPE_NULL"
        return self._checked("Get_name").name

    def Set_name(self, name: str) -> None:
        """Set the print name for this datatype."""
        layout = self._checked("Set_name")
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
        layout = self._layout
        return "" if layout is None else layout.typechar

    @property
    def typestr(self) -> str:
        """Type string."""
        layout = self._layout
        return "" if layout is None else layout.effective_typestr()

    @property
    def dtype(self) -> Any:
        """The numpy dtype of one element (an ompy extension; mpi4py has no such attribute).

        For a derived datatype whose data is all of one basic kind, that kind's dtype; for
        the value/index pairs, a structured dtype; otherwise raw bytes of the extent.
        """
        return self.layout.dtype

    def tocode(self) -> str:
        """Get character code or type string from predefined MPI datatype."""
        layout = self._layout
        if layout is not None and layout.code:
            return layout.code
        name = "DATATYPE_NULL" if layout is None else (layout.name or "this derived datatype")
        raise ValueError(f"cannot map {name} to character code or type string")

    @classmethod
    def fromcode(cls, code: str) -> Datatype:
        """Get predefined MPI datatype from character code or type string."""
        from .predefined import from_code

        return from_code(code)

    # -- life cycle -----------------------------------------------------------------------------

    def Commit(self) -> Self:
        """Commit the datatype (its convertor plan is compiled now, once)."""
        layout = self._checked("Commit")
        if not layout.committed:
            layout.description.plan  # noqa: B018 (compiled and cached on the description)
            layout.committed = True
        return self

    def Dup(self) -> Self:
        """Duplicate a datatype (its attributes go through their copy callbacks)."""
        layout = self._checked("Dup")
        copy = attrs.evolve(
            layout,
            name=f"Dup {layout.name}"[: MAX_NAME - 1] if layout.name else "",
            envelope=Envelope(COMBINER_DUP, datatypes=(Datatype._of(layout),)),
            key="",
            refs=1,
            attributes=AttributeSet(),
        )
        if layout.attributes:
            table = process_keyvals()
            try:
                layout.attributes.copy_to(
                    copy.attributes, table, Datatype._lend(layout), "Datatype.Dup"
                )
            except BaseException:
                copy.attributes.delete_all(table, Datatype._lend(copy))
                raise
        return type(self)._of(copy)

    Create_dup = Dup

    def Free(self) -> None:
        """Free the datatype (its attributes are deleted, the last set first)."""
        layout = self._checked("Free")
        if layout.is_predefined and layout.envelope.combiner != COMBINER_VALUE_INDEX:
            raise MPIException(
                ERR_TYPE,
                f"{layout.name or 'this datatype'} is a predefined datatype and cannot be freed",
            )
        layout.refs -= 1
        if layout.refs <= 0 and layout.attributes:
            layout.attributes.delete_all(process_keyvals(), Datatype._lend(layout))
        self._layout = None

    def _free(self) -> None:
        self.Free()

    # -- pickling -------------------------------------------------------------------------------

    def _reduce_user(self) -> tuple[Any, ...]:
        """A derived datatype travels as its constructor call (mpi4py's form)."""
        layout = self._layout
        if layout is None:  # pragma: no cover - DATATYPE_NULL is predefined
            return super()._reduce_user()  # type: ignore[return-value]
        base, combiner, params = self.decode()
        return (_recreate, (base, combiner, params))

    # -- counting (Status.Get_count, Get_elements, Set_elements) -------------------------------

    def count_of(self, nbytes: int) -> int:
        """Whole elements in ``nbytes`` received bytes, or ``UNDEFINED`` if not a whole number."""
        size = self.layout.size
        if size == 0:
            return 0 if nbytes == 0 else UNDEFINED
        count, rest = divmod(nbytes, size)
        return UNDEFINED if rest else count

    def elements_of(self, nbytes: int) -> int:
        """Basic elements in ``nbytes`` received bytes, or ``UNDEFINED`` (``Get_elements``)."""
        elements = self.layout.description.elements(nbytes)
        return UNDEFINED if elements is None else elements

    def bytes_of_elements(self, elements: int) -> int | None:
        """Bytes of packed data that hold the first ``elements`` basic elements (the inverse
        of :meth:`elements_of`, for ``Set_elements``); None if the datatype has no data."""
        description = self.layout.description
        per_element = description.element_count
        if per_element == 0:
            return 0 if elements == 0 else None
        whole, rest = divmod(elements, per_element)
        nbytes = whole * description.size
        for basic, count in description.signature(1):
            if rest == 0:
                break
            taken = min(rest, count)
            nbytes += taken * basic.size
            rest -= taken
        return nbytes


def require_committed(datatype: Datatype, call: str) -> Layout:
    """The layout of ``datatype`` for a communication call; a clear ``ERR_TYPE`` error if the
    datatype is null, freed or not committed (``Commit()`` it after making it)."""
    layout = datatype._layout
    if layout is None:
        raise null_datatype_error(call)
    if layout.refs <= 0:
        raise freed_datatype_error(layout, call)
    if not layout.committed:
        raise MPIException(
            ERR_TYPE,
            f"{call}: the datatype {layout.name or '(unnamed, derived)'} is not committed; "
            "call its Commit() method before using it in communication",
        )
    return layout


def _reference(datatype: Datatype) -> Datatype:
    """A handle to ``datatype`` for the program (``Get_contents``): a predefined one is the
    module's own handle, a derived one a new handle holding a new reference."""
    named = datatype._predefined_of()
    if named is not None:
        return named[1]  # type: ignore[return-value]
    layout = datatype._layout
    assert layout is not None
    layout.refs = max(layout.refs, 0) + 1
    return Datatype._of(layout)


def _recreate(base: Datatype, combiner: str, params: dict[str, Any]) -> Datatype:
    """The datatype a pickled derived datatype becomes: ``base.Create_<combiner>(**params)``,
    committed (what mpi4py's unpickling does)."""
    if combiner == "VALUE_INDEX":
        made = Datatype.Get_value_index(**params)
    else:
        made = getattr(base, f"Create_{combiner.lower()}")(**params)
    return made.Commit()
