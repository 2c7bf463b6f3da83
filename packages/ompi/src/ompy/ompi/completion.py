"""Completion records: the state of one operation in flight, shared by every engine.

This is Open MPI's ``ompi_request_t`` (the engine side); the user's handles on it, ``MPI.Request``
and the waits and tests, are the one request module ``ompy.ompi.api.request``.  Engines (the
PML, a collective schedule, a generalized request) create a :class:`CoreRequest` subclass, fill
in the status fields and call :meth:`CoreRequest.finish` once the operation is done.  Waiting is
the API layer's loop over the progress engine until ``complete`` is true, so the hot path is one
attribute read per pass.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .constants import ANY_SOURCE, ANY_TAG

#: ``callback(request)`` run once when a request completes (e.g. to start the next step).
CompletionCallback = Callable[["CoreRequest"], None]


class CoreRequest:
    """One operation in flight.

    ``source``, ``tag`` and ``count`` (bytes moved) become the ``Status`` of a receive; ``error``
    is an MPI error class (0 for success) and ``exception`` the detailed error to raise, if any.
    """

    __slots__ = (
        "cancelled",
        "complete",
        "count",
        "error",
        "exception",
        "on_complete",
        "source",
        "tag",
    )

    #: What a lowercase wait returns: the received object, None for operations that carry none
    #: (a class default; operations that carry an object set it per request).
    result: Any = None

    def __init__(self) -> None:
        self.complete = False
        self.cancelled = False
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.count = 0
        self.error = 0
        self.exception: BaseException | None = None
        self.on_complete: CompletionCallback | None = None

    def finish(self) -> None:
        """Mark the operation done and run its completion callback, once."""
        if self.complete:
            return
        self.complete = True
        callback = self.on_complete
        if callback is not None:
            self.on_complete = None
            callback(self)

    def fail(self, error_class: int, exception: BaseException) -> None:
        """Complete with an error that waiting on the request will raise."""
        self.error = error_class
        self.exception = exception
        self.finish()

    def cancel(self) -> None:
        """Ask to cancel; an engine that can cancel overrides this (then sets ``cancelled``).

        Called for pending and completed (not yet reported) requests alike: a completed eager
        send may still wait unmatched at its receiver.  The default does nothing: MPI allows a
        cancel to fail, and the request then completes normally (``Is_cancelled()`` is false).
        """

    def __repr__(self) -> str:
        state = "complete" if self.complete else "pending"
        return f"<{type(self).__name__} {state} source={self.source} tag={self.tag}>"


def chain(request: Any, callback: CompletionCallback) -> None:
    """Have ``callback(request)`` run when ``request`` (not complete yet) completes, after the
    completion callback it already has, if any: how a layer adds work to an engine's request
    (release a buffer, unpack a stand-in) without taking its callback away."""
    previous = request.on_complete
    if previous is None:
        request.on_complete = callback
        return

    def both(done: CoreRequest) -> None:
        previous(done)
        callback(done)

    request.on_complete = both
