"""Families of MPI methods that differ only by a mode: one definition, one method per member.

MPI names each variant of an operation: ``Bsend``, ``Ssend`` and ``Rsend`` are one blocking
send in three modes, ``Send_init`` .. ``Rsend_init`` one persistent send in four.  The
behaviour of a family is written once, as a method that takes the call's name (for error
messages) and the mode before the public arguments; :func:`member` makes each public method
from it, with mpi4py's signature (the definition's own parameters after those two, with their
names, defaults and type hints) and its docstring::

    def _blocking_send(self, call: str, mode: SendMode, buf: Any, dest: int, tag: int = 0)
    Bsend = member(_blocking_send, "Comm.Bsend", BUFFERED, "Blocking send in buffered mode.")

A type checker sees ``Bsend`` as ``(buf: Any, dest: int, tag: int = 0) -> None``; at run time
``inspect.signature`` and ``help`` show the same.  Members cost one call more than the
definition itself, so the hot calls (``Send``, ``Recv``, ``Isend``, ``Irecv``) are written out.

A collective and its nonblocking form are one family too (:func:`staged_pair`): the same
argument rules, the same coll table operation but for the ``i``, a request or not.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

from .communicator import Communicator
from .request import Request
from .staging import Staging

_Self = TypeVar("_Self")
_Mode = TypeVar("_Mode")
_Params = ParamSpec("_Params")
_Result = TypeVar("_Result")


def member(
    definition: Callable[Concatenate[_Self, str, _Mode, _Params], _Result],
    call: str,
    mode: _Mode,
    doc: str,
) -> Callable[Concatenate[_Self, _Params], _Result]:
    """The method ``call`` (``"Comm.Bsend"``: class and method name) of ``definition``'s family.

    Calling it runs ``definition(self, call, mode, *arguments)``.
    """

    def method(self: _Self, /, *args: _Params.args, **kwargs: _Params.kwargs) -> _Result:
        return definition(self, call, mode, *args, **kwargs)

    hidden = tuple(list(inspect.signature(definition).parameters)[1:3])  # call, mode
    _present(method, call, doc, definition, hidden)
    return method


def staged_pair(
    arguments: Callable[
        Concatenate[_Self, str, _Params], tuple[Communicator, tuple[Any, ...], Staging | None]
    ],
    call: str,
    doc: str,
    idoc: str,
) -> tuple[
    Callable[Concatenate[_Self, _Params], None], Callable[Concatenate[_Self, _Params], Request]
]:
    """The collective ``call`` (``"Comm.Gather"``) and its nonblocking form (``Comm.Igather``).

    ``arguments(self, call, *arguments)`` checks the call's arguments and returns the
    communicator, what its coll table operation takes after it (the operation is the method's
    name in lower case, ``gather``, ``igather``, as the coll interface names them) and the
    call's :class:`~.staging.Staging` (the contiguous stand-ins of non-contiguous buffers): the
    operation is taken from its table (the communicator's coll
    table, or in a heterogeneous job the reductions that convert), and the results are
    unpacked once the operation completes (at once, or before its request reports it).  None
    says the buffers go to the communicator's coll table as they are (the common case).
    """
    owner, _, name = call.rpartition(".")
    operation = name.lower()
    icall, ioperation = f"{owner}.I{operation}", f"i{operation}"

    def blocking(self: _Self, /, *args: _Params.args, **kwargs: _Params.kwargs) -> None:
        c, table_args, staging = arguments(self, call, *args, **kwargs)
        if staging is None:
            getattr(c.coll, operation)(c, *table_args)
            return
        getattr(staging.table(), operation)(c, *table_args)
        staging.finish()

    def nonblocking(self: _Self, /, *args: _Params.args, **kwargs: _Params.kwargs) -> Request:
        c, table_args, staging = arguments(self, icall, *args, **kwargs)
        if staging is None:
            return Request._of(getattr(c.coll, ioperation)(c, *table_args), c)
        return Request._of(staging.request(getattr(staging.table(), ioperation)(c, *table_args)), c)

    call_parameter = list(inspect.signature(arguments).parameters)[1]
    _present(blocking, call, doc, arguments, (call_parameter,), returns="None")
    _present(nonblocking, icall, idoc, arguments, (call_parameter,), returns="Request")
    return blocking, nonblocking


def _present(  # noqa: PLR0917 (one helper of this module)
    method: Callable[..., Any],
    call: str,
    doc: str,
    definition: Callable[..., Any],
    hidden: tuple[str, ...],
    returns: str | None = None,
) -> None:
    """Give ``method`` the name ``call``, ``doc``, and ``definition``'s signature without the
    parameters ``hidden`` (and with the return annotation ``returns``, when given)."""
    method.__name__ = call.rpartition(".")[2]
    method.__qualname__ = call
    method.__doc__ = doc
    method.__module__ = definition.__module__
    signature = inspect.signature(definition)
    parameters = [p for p in signature.parameters.values() if p.name not in hidden]
    annotations = {k: v for k, v in definition.__annotations__.items() if k not in hidden}
    if returns is None:
        signature = signature.replace(parameters=parameters)
    else:
        signature = signature.replace(parameters=parameters, return_annotation=returns)
        annotations["return"] = returns
    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__annotations__ = annotations
