"""Choosing the kernel of each (operation, datatype) pair, once, and remembering it.

The op framework is opened on first use (entry-point scan, imports, ``query``) and its modules
are kept, best priority first, for the life of the process.  The first time a pair is used, the
rules of MPI are checked and the modules are asked in order; the answer is cached, so the hot
path of every later reduction is one dict lookup::

    run = kernel(op, datatype)          # once per collective call
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
from ompy.opal.mca.params import registry as process_registry

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

_lock = threading.Lock()
_opened: OpenFramework[OpComponent] | None = None
_modules: tuple[tuple[OpComponent, OpModule], ...] = ()
#: (operation, layout) -> kernel, for reductions; the hot-path cache.
_kernels: dict[tuple[Operation | None, Layout | None], Kernel] = {}
#: The same for one-sided accumulate operations (which also admit REPLACE and NO_OP).
_accumulate_kernels: dict[tuple[Operation | None, Layout | None], Kernel] = {}
#: (intrinsic, layout, accumulate) -> kernel, shared by both caches above.
_intrinsic_kernels: dict[tuple[Intrinsic, Layout | None, bool], Kernel] = {}


def kernel(op: Op, datatype: Datatype) -> Kernel:
    """The kernel applying ``op`` to elements of ``datatype`` in a reduction.

    Raises ``MPI.Exception`` with ``ERR_OP`` when ``op`` is null or freed, when MPI does not
    define ``op`` on ``datatype``, or when no installed component implements it, and
    ``TypeError`` when ``op`` is not an ``MPI.Op`` or ``datatype`` not an ``MPI.Datatype``.
    """
    # The handles' attributes are read directly: this is the hot path of every reduction.
    # Arguments of other types (an application's mistake) fail the lookup one way or another
    # and are told apart, with a clear error, in _resolve.
    try:
        return _kernels[op._impl, datatype._layout]
    except (KeyError, AttributeError):
        return _resolve(op, datatype, accumulate=False)


def accumulate_kernel(op: Op, datatype: Datatype) -> Kernel:
    """Like :func:`kernel`, for one-sided accumulate operations (REPLACE and NO_OP allowed)."""
    try:
        return _accumulate_kernels[op._impl, datatype._layout]
    except (KeyError, AttributeError):  # not yet cached, or not handles: see kernel()
        return _resolve(op, datatype, accumulate=True)


def intrinsic_kernel(op: Intrinsic, datatype: Datatype, *, accumulate: bool = False) -> Kernel:
    """The kernel of a predefined operation named by its :class:`Intrinsic` (e.g. off the wire)."""
    if not isinstance(datatype, Datatype):
        raise TypeError(f"expecting an MPI.Datatype, not {type(datatype).__name__}")
    found = _intrinsic_kernels.get((op, datatype._layout, accumulate))
    if found is not None:
        return found
    check(op, datatype, accumulate=accumulate)
    for _component, module in modules():
        found = module.kernel(op, datatype)
        if found is not None:
            _intrinsic_kernels[op, datatype._layout, accumulate] = found
            return found
    raise MPIException(ERR_OP, _nobody_implements(op, datatype))


def _resolve(op: Op, datatype: Datatype, *, accumulate: bool) -> Kernel:
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
            ERR_OP, f"the operation {operation.name} was freed (Op.Free) through another handle"
        )
    if not datatype:
        raise null_datatype_error(f"MPI.{operation.name}")
    if operation.intrinsic is not None:
        found = intrinsic_kernel(operation.intrinsic, datatype, accumulate=accumulate)
    elif accumulate:
        raise MPIException(
            ERR_OP,
            f"the user-defined operation {operation.name} cannot be used in one-sided "
            "accumulate operations; MPI allows only predefined operations there",
        )
    else:
        assert operation.function is not None, "an operation has an intrinsic or a function"
        found = user_kernel(operation.function, datatype)
    cache = _accumulate_kernels if accumulate else _kernels
    cache[operation, datatype._layout] = found
    return found


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


def forget(operation: Operation) -> None:
    """Drop the cached kernels of ``operation`` (``Op.Free`` calls this)."""
    for cache in (_kernels, _accumulate_kernels):
        for key in [key for key in cache if key[0] is operation]:
            del cache[key]


# -- selection ------------------------------------------------------------------------------


def modules(registry: Registry | None = None) -> tuple[tuple[OpComponent, OpModule], ...]:
    """The op modules of this process, best first, opening the framework on first use.

    ``registry`` defaults to the process-wide parameter registry.  Asking again with another
    registry once the framework is open is an error, not a silent second choice: call
    :func:`reset_selection` first (tests do).
    """
    global _opened, _modules
    with _lock:
        if _opened is not None:
            if registry is not None and registry is not _opened.registry:
                raise MPIException(
                    ERR_OP,
                    "the op framework of this process is already open with another parameter "
                    "registry; call ompy.ompi.mca.op.base.reset_selection() before selecting "
                    "again",
                )
            return _modules
        opened = open_framework(framework, registry or process_registry())
        try:
            offers = opened.select_many(None)
        except BaseException:
            opened.close()
            raise
        _opened = opened
        _modules = tuple((component, offer.module) for component, offer in offers)
        for component, _module in _modules:
            opened.say(10, f"using {component.name} (priority {component.priority})")
        return _modules


def opened_framework() -> OpenFramework[OpComponent] | None:
    """The open framework (components, failures, registry), or ``None`` before first use."""
    return _opened


def reset_selection() -> None:
    """Forget the modules and every cached kernel, and close the components (tests, tools)."""
    global _opened, _modules
    with _lock:
        _kernels.clear()
        _accumulate_kernels.clear()
        _intrinsic_kernels.clear()
        if _opened is not None:
            _opened.close()
        _opened = None
        _modules = ()


def finalize() -> None:
    """Close the op framework at ``MPI.Finalize`` (after coll, whose modules use its kernels).

    The components are closed in the reverse order of opening and every cached kernel is
    dropped; calling it again does nothing.
    """
    opened = _opened
    if opened is not None:
        opened.say(10, "closing the op components")
    reset_selection()


def _nobody_implements(op: Intrinsic, datatype: Datatype) -> str:
    opened = _opened
    running = ", ".join(component.name for component, _ in _modules) or "none"
    message = (
        f"no op component implements MPI.{op.name} on {datatype.Get_name()} "
        f"(op components running: {running})"
    )
    if opened is not None:
        if opened.failures:
            message += "; failed: " + "; ".join(f"{f.name}: {f.reason}" for f in opened.failures)
        resolved = opened.registry.resolve(framework.name)
        if resolved.value:
            message += f"; the selection 'op' = '{resolved.text}' comes from {resolved.source}"
    return message + "; install ompy-op-ufunc, which implements every predefined operation"
