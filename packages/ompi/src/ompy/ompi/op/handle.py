"""``MPI.Op``: reduction operations, predefined and user-defined, as mpi4py exposes them.

Semantics every caller relies on: ``Reduce_local(inbuf, inoutbuf)`` leaves ``inbuf op inoutbuf``
in ``inoutbuf``, elementwise.  The collectives use exactly this step (through the instance's
:meth:`~ompy.ompi.mca.op.base.OpSelection.kernel`) with ``inbuf`` holding the contribution of
the lower ranks, so a non-commutative operation reduces in rank order,
``x0 op x1 op ... op xn-1``, as MPI requires.  Objects fold the same way: ``op(x, y)`` with
``x`` from the lower ranks.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, Final

from ..datatype.buffer import parse_buffer
from ..errors import ERR_OP
from ..errors import Exception as MPIException
from ..handle import Handle, predefine
from ..instance import current
from ..mca.op import Intrinsic
from .objects import OBJECT_FUNCTIONS
from .operation import Operation, lookup, register, unregister


class Op(Handle, referent="_impl"):
    """Reduction operation."""

    __slots__ = ("_impl",)

    _impl: Operation | None

    @classmethod
    def _of(cls, operation: Operation | None) -> Op:
        handle = cls.__new__(cls)
        handle._impl = operation
        return handle

    # -- handle semantics (equality, hash and truth come from Handle) ---------------------

    def __repr__(self) -> str:
        operation = self._impl
        if operation is None:
            return "<Op OP_NULL>"
        if operation.intrinsic is not None:
            return f"<Op {operation.name}>"
        return f"<Op user-defined {operation.name}{' (freed)' if operation.freed else ''}>"

    def _reduce_user(self) -> tuple[Any, ...]:
        """A user-defined operation travels as its function (mpi4py's ``Op.Create`` form)."""
        operation = self._impl
        if operation is None or operation.function is None or operation.freed:
            return super()._reduce_user()
        return (type(self).Create, (operation.function, operation.commute))

    def __call__(self, x: Any, y: Any) -> Any:
        """Call self as a function: the operation on Python objects (``x`` op ``y``)."""
        operation = self._impl
        if operation is None:
            raise ValueError("cannot call OP_NULL (a null or freed operation)")
        if operation.freed:
            raise ValueError(f"cannot call the freed operation {operation.name}")
        return operation.call(x, y)

    # -- creation and destruction -----------------------------------------------------------------

    @classmethod
    def Create(cls, function: Callable[[Any, Any, Any], Any], commute: bool = False) -> Op:
        """Create a user-defined reduction operation.

        ``function(inmem, inoutmem, datatype)`` must store ``inmem op inoutmem`` into
        ``inoutmem``.  For buffers, ``inmem`` and ``inoutmem`` are flat byte memoryviews of the
        elements (view them with ``numpy.frombuffer(inoutmem, dtype)``) and ``datatype`` is their
        ``MPI.Datatype``; mpi4py passes ``mpi4py.MPI.buffer`` objects, which behave alike.  On
        Python objects (``op(x, y)``, the lowercase reductions) it is called as
        ``function(x, y, None)`` and must return the result.  ``commute=False`` promises the
        reduction order ``x0 op x1 op ... op xn-1`` by rank.
        """
        if not callable(function):
            raise TypeError(
                f"Op.Create needs a callable function(inmem, inoutmem, datatype), "
                f"not {type(function).__name__}"
            )
        name = getattr(function, "__qualname__", None) or type(function).__name__

        def call(x: Any, y: Any) -> Any:
            return function(x, y, None)

        operation = Operation(name, None, function, bool(commute), call)
        return cls._of(register(operation))

    def Free(self) -> None:
        """Free a user-defined operation; the handle becomes ``OP_NULL``."""
        operation = self._impl
        if operation is None:
            raise MPIException(ERR_OP, "cannot free OP_NULL (a null or already freed operation)")
        if operation.intrinsic is not None:
            raise MPIException(
                ERR_OP, f"MPI.{operation.name} is a predefined operation and cannot be freed"
            )
        if not operation.freed:
            operation.freed = True
            operation.kernels.clear()
            unregister(operation)
        self._impl = None

    def _free(self) -> None:
        self.Free()

    # -- queries ------------------------------------------------------------------------------

    def Is_commutative(self) -> bool:
        """Query reduction operations for their commutativity."""
        operation = self._impl
        if operation is None:
            raise MPIException(ERR_OP, "Is_commutative on OP_NULL (a null or freed operation)")
        return operation.commute

    @property
    def is_commutative(self) -> bool:
        """Is a commutative operation."""
        return self.Is_commutative()

    @property
    def is_predefined(self) -> bool:
        """Is a predefined operation."""
        operation = self._impl
        return operation is None or operation.intrinsic is not None

    # -- process-local reduction --------------------------------------------------------------

    def Reduce_local(self, inbuf: Any, inoutbuf: Any) -> None:
        """Apply a reduction operation to local data: ``inoutbuf = inbuf op inoutbuf``."""
        source = parse_buffer(inbuf)
        target = parse_buffer(inoutbuf, readonly=False)
        if source.count != target.count:
            raise ValueError(
                f"mismatch in inbuf count {source.count} and inoutbuf count {target.count}"
            )
        if source.datatype != target.datatype:
            raise ValueError(
                f"mismatch in inbuf and inoutbuf MPI datatypes ({source.datatype.Get_name()} "
                f"and {target.datatype.Get_name()})"
            )
        # A derived datatype reduces as its predefined elements, a value/index pair as its
        # padded elements: the collectives' stand-ins say how (a contiguous buffer is itself).
        from ..api.staging import Staging  # the API builds on operations

        staging = Staging("Op.Reduce_local", datatype=target.datatype, reduction=True)
        source = staging.send(source, reduce=True)
        target = staging.receive(target, reduce=True, load=True)
        run = current("Op.Reduce_local").op.kernel(self, target.datatype)
        run(source.view, target.view, target.count)
        staging.finish()

    # -- handles --------------------------------------------------------------------------------

    def py2f(self) -> int:
        """The Fortran handle (Open MPI's numbering: ``MPI_SUM`` is 3, ``OP_NULL`` is 0)."""
        operation = self._impl
        return 0 if operation is None else operation.index

    @classmethod
    def f2py(cls, arg: int) -> Op:
        """The operation with Fortran handle ``arg``; ``OP_NULL`` when there is none."""
        return cls._of(lookup(operator.index(arg)))

    @property
    def handle(self) -> int:
        """The handle (an ompy operation is known by its Fortran handle)."""
        return self.py2f()

    @classmethod
    def fromhandle(cls, handle: int) -> Op:
        """The operation with this handle."""
        return cls.f2py(handle)

    def toint(self) -> int:
        """Translate object to integer handle (its Fortran handle)."""
        return self.py2f()

    @classmethod
    def fromint(cls, arg: int, /) -> Op:
        """Translate integer handle to object."""
        return cls.f2py(arg)


def _predefined(intrinsic: Intrinsic) -> Op:
    operation = Operation(intrinsic.name, intrinsic, None, True, OBJECT_FUNCTIONS[intrinsic])
    return predefine(Op._of(register(operation, int(intrinsic))), intrinsic.name, int(intrinsic))


OP_NULL: Final = predefine(Op(), "OP_NULL", 0)
MAX: Final = _predefined(Intrinsic.MAX)
MIN: Final = _predefined(Intrinsic.MIN)
SUM: Final = _predefined(Intrinsic.SUM)
PROD: Final = _predefined(Intrinsic.PROD)
LAND: Final = _predefined(Intrinsic.LAND)
BAND: Final = _predefined(Intrinsic.BAND)
LOR: Final = _predefined(Intrinsic.LOR)
BOR: Final = _predefined(Intrinsic.BOR)
LXOR: Final = _predefined(Intrinsic.LXOR)
BXOR: Final = _predefined(Intrinsic.BXOR)
MAXLOC: Final = _predefined(Intrinsic.MAXLOC)
MINLOC: Final = _predefined(Intrinsic.MINLOC)
REPLACE: Final = _predefined(Intrinsic.REPLACE)
NO_OP: Final = _predefined(Intrinsic.NO_OP)

#: Every predefined operation by its name in ``MPI`` (``OP_NULL`` included).
PREDEFINED: Final[dict[str, Op]] = {
    "OP_NULL": OP_NULL,
    **{
        op._impl.name: op
        for op in (
            MAX,
            MIN,
            SUM,
            PROD,
            LAND,
            BAND,
            LOR,
            BOR,
            LXOR,
            BXOR,
            MAXLOC,
            MINLOC,
            REPLACE,
            NO_OP,
        )
    },
}


def predefined(name: str) -> Op:
    """The predefined operation called ``name`` in ``MPI`` (what pickled operations refer to)."""
    try:
        return PREDEFINED[name]
    except KeyError:
        raise ValueError(f"no predefined MPI operation is called {name!r}") from None
