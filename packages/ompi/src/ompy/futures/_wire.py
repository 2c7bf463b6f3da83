"""What the executor and its workers say to each other, and how it survives pickling.

Every message from the executor to a worker is a tuple whose first item says what it is:

- ``(SETUP, options)``: apply the executor's options (``sys.path``, working directory,
  environment, the main module, globals) and run its initializer; the worker replies
  ``(True, None)`` or ``(False, the exception)``;
- ``(CALL, fn, args, kwargs)``: call ``fn(*args, **kwargs)``; the worker replies
  ``(True, result)`` or ``(False, exception)``;
- ``(CALLS, [(fn, args, kwargs), ...])``: several calls, run in order; the worker replies
  ``(True, [pickled (True, result) or (False, exception), ...])``, one pickle per call, so
  that a result that cannot travel fails alone (the executor sends a batch when the queue is
  long and the calls are short, see ``_pools``); ``(False, exception)`` if the batch could
  not be received (none of its calls ran: the executor sends them again one by one);
- ``(STOP,)``: the pool is done; the worker leaves its loop (no reply).

Replies go back on the tag of the message they answer: an executor's tag, so that several
executors sharing the workers of ``python -m ompy.futures`` each get their own replies.

Why cloudpickle: pickle sends a function by reference (module and name), which a lambda or a
function defined inside another function does not have.  A message pickle refuses is sent again
wrapped in :class:`ByValue`, whose unpickling runs ``cloudpickle.loads``: the code travels by
value.  Messages pickle accepts pay nothing for this.
"""

from __future__ import annotations

import pickle
import sys
import traceback
from collections.abc import Callable
from typing import Any

import cloudpickle  # type: ignore[import-untyped]

from ompy import MPI

SETUP = "setup"
CALL = "call"
CALLS = "calls"
STOP = "stop"

#: The name the main module of the executor's program runs under in a worker, so that its
#: ``if __name__ == "__main__":`` part does not run there.  What a worker pickles by reference
#: from that module (a class or function of the program's script) travels as
#: ``__worker__.name``; the executor's process knows its own main module under this name too
#: (:func:`alias_main`), so that such replies unpickle there.
MAIN_RUN_NAME = "__worker__"

#: What a failed pickling of a message may raise (pickle and the objects' own ``__reduce__``).
PICKLING_ERRORS = (pickle.PicklingError, AttributeError, TypeError, ValueError)


def alias_main() -> None:
    """Make this process's main module importable as :data:`MAIN_RUN_NAME` too (if that name
    is free: in a worker it is the imported main module itself)."""
    main = sys.modules.get("__main__")
    if main is not None:
        sys.modules.setdefault(MAIN_RUN_NAME, main)


class ByValue:
    """A message pickled by cloudpickle; unpickling it gives the message back."""

    __slots__ = ("blob",)

    def __init__(self, message: Any) -> None:
        self.blob = cloudpickle.dumps(message)

    def __reduce__(self) -> tuple[Callable[[bytes], Any], tuple[bytes]]:
        return cloudpickle.loads, (self.blob,)


def send_any(comm: Any, message: Any, dest: int, tag: int) -> MPI.Request:
    """Start sending ``message`` on ``comm`` (``isend``), by value if pickle refuses it."""
    try:
        return comm.isend(message, dest, tag)
    except PICKLING_ERRORS:
        return comm.isend(ByValue(message), dest, tag)


class SetupError(Exception):
    """A worker could not apply an executor's setup (other than its initializer failing)."""


class RemoteTraceback(Exception):  # noqa: N818 (concurrent.futures' name for the same thing)
    """The traceback of an exception raised in a worker, as the worker formatted it."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.tb = text

    def __str__(self) -> str:
        return self.tb


def _rebuild(error: BaseException, text: str) -> BaseException:
    error.__cause__ = RemoteTraceback(text)
    return error


class RemoteError(Exception):
    """An exception of a worker on its way back: it arrives with the remote traceback."""

    def __init__(self, error: BaseException, text: str) -> None:
        super().__init__(error, text)

    def __reduce__(self) -> tuple[Callable[..., BaseException], tuple[Any, ...]]:
        return _rebuild, self.args


def remote_error(error: BaseException, where: str) -> RemoteError:
    """Wrap ``error`` (being handled) to travel back with its traceback, headed by ``where``."""
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    error.__cause__ = error.__context__ = None
    error.__traceback__ = None
    return RemoteError(error, f'\n### {where}\n"""\n{text}"""')


def unpicklable_reply(error: BaseException, where: str) -> tuple[bool, RemoteError]:
    """The reply sent when a worker's own reply cannot be pickled even by value."""
    failure = RuntimeError(f"the worker's reply could not be pickled: {error!r}")
    return False, remote_error(failure, where)


def check_travels(obj: Any) -> None:
    """Raise (what pickling raises) unless pickle or cloudpickle can take ``obj``."""
    _dumps(obj)


def failed_reply(error: BaseException, where: str) -> tuple[bool, Any]:
    """The reply sent when a worker's reply could not be pickled (``error``, being handled):
    the object's own pickling code failing is the call's error, as with mpi4py.futures."""
    if isinstance(error, PICKLING_ERRORS):
        return unpicklable_reply(error, where)
    return False, remote_error(error, where)


def pack(reply: tuple[bool, Any], where: str) -> bytes:
    """One call's reply of a batch, pickled alone so that the executor unpickles each alone:
    a result that cannot be pickled or unpickled fails only its own call."""
    try:
        return _dumps(reply)
    except Exception as error:
        return pickle.dumps(failed_reply(error, where), protocol=5)


def unpack(blob: bytes) -> tuple[bool, Any]:
    """A reply made by :func:`pack` (an unpickling error is the call's error)."""
    try:
        reply: tuple[bool, Any] = pickle.loads(blob)
    except Exception as error:
        return False, error
    return reply


def _dumps(obj: Any) -> bytes:
    try:
        return pickle.dumps(obj, protocol=5)
    except PICKLING_ERRORS:
        blob: bytes = cloudpickle.dumps(obj, protocol=5)
        return blob
