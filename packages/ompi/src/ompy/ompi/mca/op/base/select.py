"""Choosing the kernel of each (operation, datatype) pair, once, and remembering it.

Each instance (``ompy.ompi.instance.Instance.op``) has one :class:`OpSelection`: the op
framework is opened on first use (entry-point scan, imports, ``query``) and its modules are
kept, best priority first, for the life of the instance.  The first time a pair is used, the
rules of MPI are checked and the modules are asked in order; the answer is cached, so the hot
path of every later reduction is one dict lookup::

    run = comm.instance.op.kernel(op, datatype)   # once per collective call
    run(inmem, inoutmem, count)         # once per step of the algorithm

User-defined operations (``Op.Create``) need no component: their kernel calls the user's
function with byte memoryviews of exactly the ``count`` elements and the datatype, as mpi4py
calls it with ``mpi4py.MPI.buffer`` objects.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ompy.opal.mca import OpenFramework, open_framework
from ompy.opal.mca.params import Registry

from ....datatype import Datatype
from ....datatype.datatype import Layout, null_datatype_error
from ....errors import ERR_OP
from ....errors import Exception as MPIException
from .. import framework
from ..interface import Intrinsic, Kernel, OpComponent, OpModule
from .rules import check

if TYPE_CHECKING:  # the handle module imports this one
    from typing_extensions import Buffer

    from ....op.handle import Op
    from ....op.operation import Operation


class OpSelection:
    """The op framework of one instance: its modules, best first, and the kernel caches.

    The framework is opened on first use (entry-point scan, imports, ``query``); the kernel of
    each (operation, datatype) pair is chosen once and cached, so the hot path of every later
    reduction is one dict lookup (:meth:`kernel`).
    """

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._opened: OpenFramework[OpComponent] | None = None
        self._modules: tuple[tuple[OpComponent, OpModule], ...] = ()
        #: (operation, layout) -> kernel, for reductions; the hot-path cache.
        self._kernels: dict[tuple[Operation | None, Layout | None], Kernel] = {}
        #: The same for one-sided accumulate operations (which also admit REPLACE and NO_OP).
        self._accumulate_kernels: dict[tuple[Operation | None, Layout | None], Kernel] = {}
        #: (intrinsic, layout, accumulate) -> kernel, shared by both caches above.
        self._intrinsic_kernels: dict[tuple[Intrinsic, Layout | None, bool], Kernel] = {}

    # -- kernels -------------------------------------------------------------------------------

    def kernel(self, op: Op, datatype: Datatype) -> Kernel:
        """The kernel applying ``op`` to elements of ``datatype`` in a reduction.

        Raises ``MPI.Exception`` with ``ERR_OP`` when ``op`` is null or freed, when MPI does
        not define ``op`` on ``datatype``, or when no installed component implements it, and
        ``TypeError`` when ``op`` is not an ``MPI.Op`` or ``datatype`` not an ``MPI.Datatype``.
        """
        # The handles' attributes are read directly: this is the hot path of every reduction.
        # Arguments of other types (an application's mistake) fail the lookup one way or
        # another and are told apart, with a clear error, in _resolve.
        try:
            return self._kernels[op._impl, datatype._layout]
        except (KeyError, AttributeError):
            return self._resolve(op, datatype, accumulate=False)

    def accumulate_kernel(self, op: Op, datatype: Datatype) -> Kernel:
        """Like :meth:`kernel`, for one-sided accumulate operations (REPLACE, NO_OP allowed)."""
        try:
            return self._accumulate_kernels[op._impl, datatype._layout]
        except (KeyError, AttributeError):  # not yet cached, or not handles: see kernel()
            return self._resolve(op, datatype, accumulate=True)

    def intrinsic_kernel(
        self, op: Intrinsic, datatype: Datatype, *, accumulate: bool = False
    ) -> Kernel:
        """The kernel of a predefined operation named by its :class:`Intrinsic`."""
        try:
            return self._intrinsic_kernels[op, datatype._layout, accumulate]
        except (KeyError, AttributeError):
            pass
        if not isinstance(datatype, Datatype):
            raise TypeError(f"expecting an MPI.Datatype, not {type(datatype).__name__}")
        check(op, datatype, accumulate=accumulate)
        for _component, module in self.modules():
            found = module.kernel(op, datatype)
            if found is not None:
                self._intrinsic_kernels[op, datatype._layout, accumulate] = found
                return found
        raise MPIException(ERR_OP, self._nobody_implements(op, datatype))

    def _resolve(self, op: Op, datatype: Datatype, *, accumulate: bool) -> Kernel:
        from ....op.handle import Op

        if not isinstance(op, Op):
            raise TypeError(f"expecting an MPI.Op, not {type(op).__name__}")
        if not isinstance(datatype, Datatype):
            raise TypeError(f"expecting an MPI.Datatype, not {type(datatype).__name__}")
        operation = op._impl
        if operation is None:
            raise MPIException(ERR_OP, "the operation is OP_NULL (a null or freed operation)")
        if operation.freed:
            raise MPIException(
                ERR_OP,
                f"the operation {operation.name} was freed (Op.Free) through another handle",
            )
        if not datatype:
            raise null_datatype_error(f"MPI.{operation.name}")
        if operation.intrinsic is not None:
            found = self.intrinsic_kernel(operation.intrinsic, datatype, accumulate=accumulate)
        elif accumulate:
            raise MPIException(
                ERR_OP,
                f"the user-defined operation {operation.name} cannot be used in one-sided "
                "accumulate operations; MPI allows only predefined operations there",
            )
        else:  # cached on the operation, which Free empties: never in the hot-path cache
            cached = operation.kernels.get(datatype._layout)
            if cached is None:
                assert operation.function is not None, "an intrinsic or a function"
                cached = operation.kernels[datatype._layout] = user_kernel(
                    operation.function, datatype
                )
            return cached
        cache = self._accumulate_kernels if accumulate else self._kernels
        cache[operation, datatype._layout] = found
        return found

    # -- selection -----------------------------------------------------------------------------

    def modules(self) -> tuple[tuple[OpComponent, OpModule], ...]:
        """The op modules of this instance, best first, opening the framework on first use."""
        with self._lock:
            if self._opened is not None:
                return self._modules
            opened = open_framework(framework, self.registry)
            try:
                offers = opened.select_many(None)
            except BaseException:
                opened.close()
                raise
            self._opened = opened
            self._modules = tuple((component, offer.module) for component, offer in offers)
            for component, _module in self._modules:
                opened.log.info("using %s (priority %d)", component.name, component.priority)
            return self._modules

    def opened(self) -> OpenFramework[OpComponent] | None:
        """The open framework (components, failures, registry), or ``None`` before first use."""
        return self._opened

    def finalize(self) -> None:
        """Close the framework at ``MPI.Finalize`` (after coll, whose modules use its kernels).

        The components are closed in the reverse order of opening and every cached kernel is
        dropped; calling it again does nothing.
        """
        with self._lock:
            self._kernels.clear()
            self._accumulate_kernels.clear()
            self._intrinsic_kernels.clear()
            opened, self._opened = self._opened, None
            self._modules = ()
        if opened is not None:
            opened.log.info("closing the op components")
            opened.close()

    def _nobody_implements(self, op: Intrinsic, datatype: Datatype) -> str:
        opened = self._opened
        running = ", ".join(component.name for component, _ in self._modules) or "none"
        message = (
            f"no op component implements MPI.{op.name} on {datatype.Get_name()} "
            f"(op components running: {running})"
        )
        if opened is not None:
            if opened.failures:
                message += "; failed: " + "; ".join(
                    f"{f.name}: {f.reason}" for f in opened.failures
                )
            resolved = opened.registry.resolve(framework.name)
            if resolved.value:
                message += f"; the selection 'op' = '{resolved.text}' comes from {resolved.source}"
        return message + "; install ompy-op-ufunc, which implements every predefined operation"


def user_kernel(function: Callable[[Any, Any, Any], Any], datatype: Datatype) -> Kernel:
    """A kernel calling ``function(inmem, inoutmem, datatype)`` on exactly ``count`` elements.

    The memories are flat byte memoryviews (``inmem`` as writable as the caller's buffer);
    the function must leave ``inmem op inoutmem`` in ``inoutmem``.
    """
    extent = datatype.layout.extent

    def run(inmem: Buffer, inoutmem: Buffer, count: int) -> None:
        nbytes = count * extent
        function(_bytes(inmem, nbytes), _bytes(inoutmem, nbytes), datatype)

    return run


def _bytes(memory: Buffer, nbytes: int) -> memoryview:
    view = memory if type(memory) is memoryview else memoryview(memory)
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    return view if view.nbytes == nbytes else view[:nbytes]
