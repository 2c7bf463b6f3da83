"""``MPI.Errhandler`` and the error-handler calls of communicators and sessions.

Where errors are dispatched
---------------------------
Every failing MPI call raises ``MPI.Exception`` where the failure is found (an argument check,
a truncated receive, a PML error), exactly as before error handlers existed.  The handler of
the object the call was made on runs where that exception *leaves the API*: a thin wrapper
around each public method of the handle classes catches ``MPI.Exception``, runs the object's
handler (:func:`ompy.ompi.errhandler.invoke`) and re-raises.  So:

- ``ERRORS_RETURN`` (the default on ``COMM_WORLD``, ``COMM_SELF``, every communicator made
  from them and every session, as in mpi4py): the call raises ``MPI.Exception``;
- ``ERRORS_ARE_FATAL``/``ERRORS_ABORT``: the instance's ``abort`` ends the job with the error
  message (a launched process exits through the run-time, which ends the job);
- a user handler (``Comm.Create_errhandler(fn)``): ``fn(handle, errorcode)`` runs, then the
  call raises ``MPI.Exception`` anyway, as in mpi4py (whose C call returns the error code after
  the handler returned, which it raises).

The wrappers cost a Python call per API call, so they are installed only when a program first
gives some object a handler other than ``ERRORS_RETURN`` (:func:`install_dispatch`, once per
process, idempotent).  A program that never does so runs the methods exactly as written: the
default path costs nothing.  Once installed, a method of an object whose handler is
``ERRORS_RETURN`` pays only that call.  An exception handled once is marked, so an API call
made inside another (``Clone`` calls ``Dup``) does not run the handler twice.

Each class with error handlers inherits :class:`ErrhandlerMixin` through a small kind-specific
mixin that says where its handler lives (:class:`CommErrhandlers`, :class:`SessionErrhandlers`;
windows and files add theirs the same way), so ``Set_errhandler``/``Get_errhandler``/
``Call_errhandler``/``Create_errhandler`` are written once.  ``Request`` has no handler of its
own: :class:`RequestErrhandlers` (dispatch hooks only) sends its errors to its communicator's.
"""

from __future__ import annotations

import functools
import inspect
import threading
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, Self

from ..errhandler import (
    ERRORS_ABORT as _ABORT,
)
from ..errhandler import (
    ERRORS_ARE_FATAL as _FATAL,
)
from ..errhandler import (
    ERRORS_RETURN as _RETURN,
)
from ..errhandler import ErrhandlerObject, invoke
from ..errors import ERR_ARG
from ..errors import Exception as MPIException
from ..handle import Handle, predefine
from ..instance import Instance
from .checks import as_int
from .communicator import Communicator

if TYPE_CHECKING:
    from .session import SessionState

__all__ = [
    "ERRHANDLER_NULL",
    "ERRORS_ABORT",
    "ERRORS_ARE_FATAL",
    "ERRORS_RETURN",
    "CommErrhandlers",
    "Errhandler",
    "ErrhandlerDispatch",
    "ErrhandlerMixin",
    "RequestErrhandlers",
    "SessionErrhandlers",
    "errhandler_object",
    "install_dispatch",
]


class Errhandler(Handle, referent="_e"):
    """Error handler."""

    __slots__ = ("_e",)

    _e: ErrhandlerObject | None

    @classmethod
    def _of(cls, handler: ErrhandlerObject | None) -> Self:
        handle = cls.__new__(cls)
        handle._e = handler
        return handle

    def __repr__(self) -> str:
        handler = self._e
        name = "ERRHANDLER_NULL" if handler is None else handler.name
        return f"<{type(self).__name__} {name}>"

    def _free(self) -> None:
        self.Free()

    def Free(self) -> None:
        """Free an error handler (this handle becomes ``ERRHANDLER_NULL``).

        Objects that use the handler keep it, as in MPI; the predefined constants themselves
        cannot be freed.
        """
        if self._e is None:
            raise MPIException(ERR_ARG, "Errhandler.Free: the handle is ERRHANDLER_NULL")
        if self._constant():
            named = self._predefined_of()
            assert named is not None
            raise MPIException(
                ERR_ARG, f"Errhandler.Free: {named[0]} is predefined and cannot be freed"
            )
        self._e = None


# The predefined handles, with Open MPI's integer handles.
#: Null error handler.
ERRHANDLER_NULL: Final = predefine(Errhandler(), "ERRHANDLER_NULL", 0)
#: Errors are fatal error handler: failing calls end the job.
ERRORS_ARE_FATAL: Final = predefine(Errhandler._of(_FATAL), "ERRORS_ARE_FATAL", 1)
#: Errors return error handler: failing calls raise ``MPI.Exception``.
ERRORS_RETURN: Final = predefine(Errhandler._of(_RETURN), "ERRORS_RETURN", 2)
#: Errors abort error handler: failing calls end the processes of the object (the job).
ERRORS_ABORT: Final = predefine(Errhandler._of(_ABORT), "ERRORS_ABORT", 3)


def errhandler_object(
    errhandler: object, kind: str, call: str, *, optional: bool = True
) -> ErrhandlerObject:
    """The handler an ``errhandler`` argument names, checked for an object of ``kind``.

    None, where the argument is ``optional``, means mpi4py's default (``ERRORS_RETURN``:
    errors raise ``MPI.Exception``).  Any other handler is about to be given to an object, so
    the dispatch wrappers are installed (:func:`install_dispatch`) before it returns.
    """
    if errhandler is None and optional:
        return _RETURN
    if not isinstance(errhandler, Errhandler):
        raise TypeError(f"{call}: expecting an Errhandler, not {type(errhandler).__name__}")
    handler = errhandler._e
    if handler is None:
        raise MPIException(ERR_ARG, f"{call}: the error handler is ERRHANDLER_NULL")
    if handler.kind is not None and handler.kind != kind:
        raise MPIException(
            ERR_ARG,
            f"{call}: {handler.name} was created for {handler.kind} objects, not {kind} objects",
        )
    if handler is not _RETURN:
        install_dispatch()
    return handler


# -- the mixin ----------------------------------------------------------------------------------


class ErrhandlerHolder(Protocol):
    """What an object with an error handler offers (a communicator, a session's state)."""

    instance: Instance
    errhandler: ErrhandlerObject


class ErrhandlerDispatch:
    """Where a handle's errors go: the hooks the dispatch wrappers use (see the docstring)."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A class made after the wrappers went in gets them too (this module's own classes
        # are made at import, before anything can be installed).
        if cls.__module__ != __name__ and _installed():
            install_dispatch()

    def _errhandler_holder_or_none(self) -> ErrhandlerHolder | None:
        """The live object whose handler runs, or None: no handler runs for a null handle."""
        raise NotImplementedError

    def _errhandler_describe(self, holder: Any) -> str:
        """Which object an abort message names."""
        raise NotImplementedError

    def _errhandler_view(self, holder: Any) -> Any:
        """A fresh handle on ``holder`` for a user function."""
        raise NotImplementedError

    def _errhandler_forget(self, handle: Any) -> None:
        """Turn a handle made by :meth:`_errhandler_view` null."""
        raise NotImplementedError

    def _errhandler_raise(self, error: MPIException, call: str) -> None:
        """Run the holder's handler for ``error`` on its way out of ``call`` (then re-raised)."""
        if error.__dict__.get("_ompy_handled"):
            return
        holder = self._errhandler_holder_or_none()
        if holder is None or holder.errhandler is _RETURN:
            return
        error._ompy_handled = True  # type: ignore[attr-defined]
        invoke(
            holder.instance,
            holder.errhandler,
            error.ob_mpi,
            where=f"{call} on {self._errhandler_describe(holder)}",
            make_handle=lambda: self._errhandler_view(holder),
            forget_handle=self._errhandler_forget,
            detail=error.detail,
        )


class ErrhandlerMixin(ErrhandlerDispatch):
    """The error-handler calls, written once for every kind of object that has a handler."""

    __slots__ = ()

    #: The kind user handlers must be created for (``Comm.Create_errhandler`` -> "comm").
    _errhandler_kind: ClassVar[str]

    def _errhandler_holder(self, call: str) -> ErrhandlerHolder:
        """The live object behind the handle (raises if the handle is null)."""
        raise NotImplementedError

    # -- the calls -----------------------------------------------------------------------------

    @classmethod
    def Create_errhandler(cls, errhandler_fn: Callable[[Any, int], None]) -> Errhandler:
        """Create a new error handler: ``errhandler_fn(obj, errorcode)`` runs on errors."""
        call = f"{cls.__name__}.Create_errhandler"
        if not callable(errhandler_fn):
            raise TypeError(f"{call}: errhandler_fn must be callable, not {errhandler_fn!r}")
        return Errhandler._of(ErrhandlerObject.user(cls._errhandler_kind, errhandler_fn))

    def Get_errhandler(self) -> Errhandler:
        """Get the error handler (a new handle; free it with ``Free``)."""
        holder = self._errhandler_holder(f"{type(self).__name__}.Get_errhandler")
        return Errhandler._of(holder.errhandler)

    def Set_errhandler(self, errhandler: Errhandler) -> None:
        """Set the error handler."""
        call = f"{type(self).__name__}.Set_errhandler"
        holder = self._errhandler_holder(call)
        holder.errhandler = errhandler_object(
            errhandler, self._errhandler_kind, call, optional=False
        )

    def Call_errhandler(self, errorcode: int) -> None:
        """Call the error handler with an error code (returns if the handler returns)."""
        call = f"{type(self).__name__}.Call_errhandler"
        holder = self._errhandler_holder(call)
        errorcode = as_int(errorcode, f"{call}: errorcode")
        invoke(
            holder.instance,
            holder.errhandler,
            errorcode,
            where=f"{call} on {self._errhandler_describe(holder)}",
            make_handle=lambda: self._errhandler_view(holder),
            forget_handle=self._errhandler_forget,
        )


class CommErrhandlers(ErrhandlerMixin):
    """Error handlers of ``Comm``: the handler lives on the communicator, shared by its handles."""

    __slots__ = ()
    _errhandler_kind = "comm"
    _c: Communicator | None  # provided by Comm

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    @classmethod
    def _of(cls, communicator: Communicator | None) -> Self:  # provided by Comm
        raise NotImplementedError

    def _errhandler_holder(self, call: str) -> Communicator:
        return self._live(call)

    def _errhandler_holder_or_none(self) -> Communicator | None:
        c = self._c
        return None if c is None or c.freed else c

    def _errhandler_describe(self, holder: Communicator) -> str:
        return f"{holder.name} (rank {holder.rank} of {holder.size})"

    def _errhandler_view(self, holder: Communicator) -> Self:
        return type(self)._of(holder)

    def _errhandler_forget(self, handle: Any) -> None:
        handle._c = None


class SessionErrhandlers(ErrhandlerMixin):
    """Error handlers of ``Session``: the handler lives on the session's state."""

    __slots__ = ()
    _errhandler_kind = "session"
    _s: SessionState | None  # provided by Session

    def _live(self, call: str) -> SessionState:  # provided by Session
        raise NotImplementedError

    @classmethod
    def _of(cls, state: SessionState) -> Self:  # provided by Session
        raise NotImplementedError

    def _errhandler_holder(self, call: str) -> SessionState:
        return self._live(call)

    def _errhandler_holder_or_none(self) -> SessionState | None:
        state = self._s
        return None if state is None or state.finalized else state

    def _errhandler_describe(self, holder: SessionState) -> str:
        return f"a session of rank {holder.instance.world_rank}"

    def _errhandler_view(self, holder: SessionState) -> Self:
        return type(self)._of(holder)

    def _errhandler_forget(self, handle: Any) -> None:
        handle._s = None


class RequestErrhandlers(ErrhandlerDispatch):
    """Errors of ``Request`` calls (``Wait``, ``Test``, ...) go to the communicator's handler,
    which a user function sees as the communicator, as in MPI.

    A generalized request (``Grequest``) has no communicator: it waits through its instance.
    Its errors (a failing ``query_fn``, ``Complete`` twice) belong to no object, so, as MPI 4
    says of such errors, ``COMM_SELF``'s handler runs when the world model is up on that
    instance; otherwise none does and the call raises.
    """

    __slots__ = ()
    _comm: Any  # provided by Request: a Communicator, or an Instance for a Grequest

    def _errhandler_holder_or_none(self) -> Communicator | None:
        c = self._comm
        if c is None:
            return None
        if type(c) is not Communicator:
            c = _self_communicator(c)
            if c is None:
                return None
        return None if c.freed else c

    def _errhandler_describe(self, holder: Communicator) -> str:
        if type(self._comm) is not Communicator:
            return f"a generalized request (its errors go to {holder.name}, rank {holder.rank})"
        return f"a request on {holder.name} (rank {holder.rank} of {holder.size})"

    def _errhandler_view(self, holder: Communicator) -> Any:
        from .comm import Intracomm  # the communicator module imports the request module

        return Intracomm._of(holder)

    def _errhandler_forget(self, handle: Any) -> None:
        handle._c = None


def _self_communicator(instance: object) -> Communicator | None:
    """``COMM_SELF``'s communicator when the world model is up on ``instance``, else None."""
    from .comm import COMM_SELF  # the communicator module imports the request module

    c = COMM_SELF._c
    return c if c is not None and c.instance is instance else None


# -- installing the dispatch wrappers -----------------------------------------------------------

#: Methods that are not wrapped: Call_errhandler runs the handler itself and returns.
_UNWRAPPED: Final = frozenset({"Call_errhandler"})
_MARK: Final = "__ompy_errhandler__"
_INSTALL_LOCK: Final = threading.Lock()


def _dispatch(obj: object, error: MPIException, name: str) -> None:
    if isinstance(obj, ErrhandlerDispatch):
        obj._errhandler_raise(error, f"{type(obj).__name__}.{name}")


def _dispatching(method: types.FunctionType) -> Callable[..., Any]:
    """``method``, running the object's handler on an ``MPI.Exception`` before re-raising it.

    The wrapper is generated with ``method``'s own parameters (defaults are the same objects),
    so a call passes its arguments straight through: a ``*args, **kwargs`` wrapper costs several
    times more per call (measured: ~0.1 us against ~0.6 us on a loaded machine).
    """
    params = list(inspect.signature(method).parameters.values())
    if not params:
        return method  # not a method of an object: nothing to dispatch to
    namespace: dict[str, Any] = {
        "_ompy_method": method,
        "_ompy_error": MPIException,
        "_ompy_dispatch": _dispatch,
        "_ompy_name": method.__name__,
    }
    declared: list[str] = []
    passed: list[str] = []
    keyword_marker = False
    for index, param in enumerate(params):
        text = param.name
        if param.default is not inspect.Parameter.empty:
            namespace[f"_ompy_default{index}"] = param.default
            text += f"=_ompy_default{index}"
        kind = param.kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            declared.append(f"*{param.name}")
            passed.append(f"*{param.name}")
            keyword_marker = True
            continue
        if kind is inspect.Parameter.VAR_KEYWORD:
            declared.append(f"**{param.name}")
            passed.append(f"**{param.name}")
            continue
        if kind is inspect.Parameter.KEYWORD_ONLY:
            if not keyword_marker:
                declared.append("*")
                keyword_marker = True
            declared.append(text)
            passed.append(f"{param.name}={param.name}")
            continue
        declared.append(text)
        passed.append(param.name)
        last_positional_only = kind is inspect.Parameter.POSITIONAL_ONLY and (
            index + 1 == len(params) or params[index + 1].kind is not kind
        )
        if last_positional_only:
            declared.append("/")
    source = (
        f"def {method.__name__}({', '.join(declared)}):\n"
        f"    try:\n"
        f"        return _ompy_method({', '.join(passed)})\n"
        f"    except _ompy_error as _ompy_exception:\n"
        f"        _ompy_dispatch({params[0].name}, _ompy_exception, _ompy_name)\n"
        f"        raise\n"
    )
    exec(compile(source, f"<errhandler dispatch of {method.__qualname__}>", "exec"), namespace)
    call = functools.update_wrapper(namespace[method.__name__], method)
    setattr(call, _MARK, True)
    return call


def _all_subclasses(cls: type) -> list[type]:
    found: list[type] = []
    subclasses: list[type] = cls.__subclasses__()
    for sub in subclasses:
        found.append(sub)
        found.extend(_all_subclasses(sub))
    return found


def _installed() -> bool:
    """Whether :func:`install_dispatch` ran (seen on the wrapped methods, not kept as state)."""
    return _MARK in vars(ErrhandlerMixin)["Get_errhandler"].__dict__


def install_dispatch() -> None:
    """Wrap every public method of ompy's handle classes that have error handlers (idempotent).

    The classes are those that inherit :class:`ErrhandlerDispatch`, and every ompy class they
    inherit methods from (``PointToPoint``, ``Collectives``, ...); user subclasses inherit the
    wrapped methods.  Called the first time an object gets a handler other than
    ``ERRORS_RETURN``.
    """
    with _INSTALL_LOCK:
        seen: set[type] = set()
        for handle_class in _all_subclasses(ErrhandlerDispatch):
            for cls in handle_class.__mro__:
                if cls in seen or not cls.__module__.startswith("ompy."):
                    continue
                seen.add(cls)
                for name, member in list(vars(cls).items()):
                    if (
                        name.startswith("_")
                        or name in _UNWRAPPED
                        or not isinstance(member, types.FunctionType)
                        or _MARK in member.__dict__
                    ):
                        continue
                    setattr(cls, name, _dispatching(member))
