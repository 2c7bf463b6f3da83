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
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

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

    method.__name__ = call.rpartition(".")[2]
    method.__qualname__ = call
    method.__doc__ = doc
    method.__module__ = definition.__module__
    signature = inspect.signature(definition)
    own, call_parameter, mode_parameter, *public = signature.parameters.values()
    public_signature = signature.replace(parameters=[own, *public])
    method.__signature__ = public_signature  # type: ignore[attr-defined]
    hidden = (call_parameter.name, mode_parameter.name)
    method.__annotations__ = {
        key: value for key, value in definition.__annotations__.items() if key not in hidden
    }
    return method
