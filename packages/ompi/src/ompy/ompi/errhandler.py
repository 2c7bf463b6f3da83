"""Error handlers underneath ``MPI.Errhandler``: what each one does, and the instance's table.

An MPI object that can fail (communicator, session, later window and file) carries an error
handler, which decides what happens when a call on it fails: return the error (mpi4py raises
it as ``MPI.Exception``), abort the job, or call a user function first.  This module holds the
objects handles refer to (:class:`ErrhandlerObject`), the three predefined ones, and
:func:`invoke`, the one place a handler runs.  Where handlers are invoked from (the API
boundary) is :mod:`ompy.ompi.api.errhandler`'s business; integer handles come from the handle
base (:mod:`ompy.ompi.handle`), as for every other handle class.
"""

from __future__ import annotations

import enum
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import attrs

from .errors import ERR_OTHER, SUCCESS
from .errors import Exception as MPIException

if TYPE_CHECKING:
    from .instance import Instance


class Action(enum.Enum):
    """What a handler does with an error."""

    #: Hand the error back: the call raises ``MPI.Exception`` (mpi4py's default).
    RETURN = "return"
    #: End the job (MPI_ERRORS_ARE_FATAL).
    FATAL = "fatal"
    #: End the processes of the object's group; ompy ends the job (MPI_ERRORS_ABORT).
    ABORT = "abort"
    #: Call a user function with (handle, errorcode), then hand the error back.
    USER = "user"


#: The kinds of object a user handler can be created for (``Comm.Create_errhandler``, ...).
KINDS: Final = ("comm", "session", "win", "file")


@attrs.define(eq=False)
class ErrhandlerObject:
    """One error handler; ``MPI.Errhandler`` handles refer to it."""

    name: str
    action: Action
    #: The kind of object a user handler is for (one of :data:`KINDS`); None: any kind.
    kind: str | None = None
    function: Callable[[Any, int], Any] | None = None

    @classmethod
    def user(cls, kind: str, function: Callable[[Any, int], Any]) -> ErrhandlerObject:
        """A new user handler for objects of ``kind``.

        It needs no instance: MPI lets a program create a session's handler before any
        session (or ``MPI.Init``) exists, to pass it to ``Session.Init``.
        """
        if kind not in KINDS:
            raise ValueError(f"error handlers are for {', '.join(KINDS)} objects, not {kind!r}")
        return cls(f"user {kind} errhandler", Action.USER, kind, function)

    @property
    def predefined(self) -> bool:
        return self.kind is None

    def __repr__(self) -> str:
        return f"<ErrhandlerObject {self.name}>"


#: The predefined handlers (``MPI.ERRORS_ARE_FATAL``, ... refer to them).
ERRORS_ARE_FATAL: Final = ErrhandlerObject("MPI_ERRORS_ARE_FATAL", Action.FATAL)
ERRORS_RETURN: Final = ErrhandlerObject("MPI_ERRORS_RETURN", Action.RETURN)
ERRORS_ABORT: Final = ErrhandlerObject("MPI_ERRORS_ABORT", Action.ABORT)


def invoke(
    instance: Instance,
    handler: ErrhandlerObject,
    errorcode: int,
    *,
    where: str,
    make_handle: Callable[[], Any],
    forget_handle: Callable[[Any], None],
    detail: str | None = None,
) -> None:
    """Run ``handler`` for ``errorcode``; returns if the error goes back to the caller.

    ``where`` names the call and object for abort messages; ``make_handle()`` builds the handle
    a user function receives, which ``forget_handle`` turns null afterwards (as mpi4py does, so
    the function cannot keep it); ``detail`` is what the failing call said was wrong.  A user
    function that raises ends the job: the error cannot be handed back through it.
    """
    action = handler.action
    if action is Action.RETURN:
        return
    if action is Action.USER:
        assert handler.function is not None
        handle = make_handle()
        try:
            handler.function(handle, errorcode)
        except BaseException:
            traceback.print_exc()
            print("Fatal error: exception in user-defined error handler function", file=sys.stderr)
            instance.abort(1, f"{where}: exception in user-defined error handler function")
        finally:
            forget_handle(handle)
        return
    # ERRORS_ARE_FATAL / ERRORS_ABORT: the job ends (an abort never reports success).
    text = str(MPIException(errorcode, detail))
    instance.abort(
        errorcode if errorcode != SUCCESS else ERR_OTHER,
        f"{where}: {text}; {handler.name}: the processes of this object will now abort "
        "(ompy ends the job)",
    )
