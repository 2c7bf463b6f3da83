"""``MPI.Request`` and ``MPI.Prequest``: handles on operations in flight, and the waits.

A request handle refers to one operation (a PML request, or a composite such as a pickled
receive) until it completes: then, as in mpi4py, a completed ordinary request becomes
``REQUEST_NULL`` in place, and a persistent request becomes inactive (``Start`` reuses it).
Null and inactive requests count as already complete with an empty status in every wait and
test.  Waits loop over the progress engine of the request's communicator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from ..constants import UNDEFINED
from ..errors import ERR_REQUEST
from ..errors import Exception as MPIException
from ..status import Status
from .communicator import Communicator
from .ops import fill_empty, fill_status

#: Starts one round of a persistent request: returns the new operation.
Starter = Callable[[], Any]


class Request:
    """Request handler."""

    __slots__ = ("_comm", "_core")

    def __init__(self, request: Request | None = None) -> None:
        if request is None:
            self._core: Any = None
            self._comm: Communicator | None = None
        elif isinstance(request, Request):
            self._core = request._core
            self._comm = request._comm
        else:
            raise TypeError(f"Request() takes a Request to refer to, not {type(request).__name__}")

    @classmethod
    def _of(cls, core: Any, comm: Communicator) -> Request:
        request = cls.__new__(cls)
        request._core = core
        request._comm = comm
        return request

    # -- handle semantics ----------------------------------------------------------------------

    def _is_null(self) -> bool:
        return self._core is None

    def __bool__(self) -> bool:
        return not self._is_null()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        if self._is_null() and other._is_null():
            return True
        return self is other or (self._core is not None and self._core is other._core)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None  # type: ignore[assignment]  # a handle changes when it completes

    def __repr__(self) -> str:
        if self._is_null():
            return "<Request REQUEST_NULL>"
        return f"<{type(self).__name__} {'complete' if self._done() else 'pending'}>"

    # -- completion ----------------------------------------------------------------------------

    def _test_core(self) -> bool:
        """Whether the operation is complete, after one progress pass if it was not.

        MPI requires a test to make progress: ``while not req.Test(): pass`` must finish.
        """
        core = self._core
        if core is None or core.complete:
            return True
        self._comm.engine.progress()
        return core.complete

    def _done(self) -> bool:
        core = self._core
        return core is None or core.complete

    def _wait_core(self) -> None:
        core = self._core
        if core is not None and not core.complete:
            self._comm.engine.wait_until(lambda: core.complete)

    def _retire(self, status: Status | None) -> Any:
        """Report a completed request: fill ``status``, release the handle, raise or return."""
        core = self._core
        if core is None:
            fill_empty(status)
            return None
        fill_status(status, core)
        self._release()
        if core.exception is not None:
            raise core.exception
        return getattr(core, "result", None)

    def _release(self) -> None:
        self._core = None

    # -- uppercase -----------------------------------------------------------------------------

    def Wait(self, status: Status | None = None) -> Literal[True]:
        """Wait for a non-blocking operation to complete."""
        self._wait_core()
        self._retire(status)
        return True

    def Test(self, status: Status | None = None) -> bool:
        """Test for the completion of a non-blocking operation."""
        if not self._test_core():
            return False
        self._retire(status)
        return True

    def Get_status(self, status: Status | None = None) -> bool:
        """Non-destructive test for the completion of a request."""
        core = self._core
        if core is None:
            fill_empty(status)
            return True
        if not self._test_core():
            return False
        fill_status(status, core)
        return True

    def Cancel(self) -> None:
        """Cancel a request (a receive not yet matched is cancelled; other cancels may fail)."""
        core, comm = self._core, self._comm
        if core is None or core.complete or comm is None:
            return
        with comm.engine.lock:  # a receive leaves the PML's matching state
            core.cancel()

    def Free(self) -> None:
        """Free a communication request (the operation itself still completes)."""
        if self._is_null():
            raise MPIException(ERR_REQUEST, "Request.Free: the request is REQUEST_NULL")
        self._core = None

    # -- lowercase -----------------------------------------------------------------------------

    def wait(self, status: Status | None = None) -> Any:
        """Wait for a non-blocking operation to complete; returns the received object."""
        self._wait_core()
        return self._retire(status)

    def test(self, status: Status | None = None) -> tuple[bool, Any | None]:
        """Test for the completion of a non-blocking operation; (flag, received object)."""
        if not self._test_core():
            return (False, None)
        return (True, self._retire(status))

    def get_status(self, status: Status | None = None) -> bool:
        """Test for the completion of a non-blocking operation (without releasing it)."""
        return self.Get_status(status)

    def cancel(self) -> None:
        """Cancel a request."""
        self.Cancel()

    # -- many requests -------------------------------------------------------------------------

    @classmethod
    def Waitany(cls, requests: Sequence[Request], status: Status | None = None) -> int:
        """Wait for any previously initiated request to complete; UNDEFINED if all are null."""
        index = _wait_any(requests)
        if index == UNDEFINED:
            fill_empty(status)
            return UNDEFINED
        requests[index]._retire(status)
        return index

    @classmethod
    def Testany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool]:
        """Test for completion of any previously initiated request."""
        active = _active(requests)
        if not active:
            fill_empty(status)
            return (UNDEFINED, True)
        _progress_unless_done(requests, active)
        for index in active:
            if requests[index]._core.complete:
                requests[index]._retire(status)
                return (index, True)
        return (UNDEFINED, False)

    @classmethod
    def Waitall(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> Literal[True]:
        """Wait for all previously initiated requests to complete."""
        _wait_all(requests)
        _retire_all(requests, range(len(requests)), statuses)
        return True

    @classmethod
    def Testall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:
        """Test for completion of all previously initiated requests."""
        _progress_unless_done(requests, _active(requests))
        if not all(request._done() for request in requests):
            return False
        _retire_all(requests, range(len(requests)), statuses)
        return True

    @classmethod
    def Waitsome(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> list[int] | None:
        """Wait for some previously initiated requests to complete; None if all are null."""
        if _wait_any(requests) == UNDEFINED:
            return None
        return _retire_done(requests, statuses)

    @classmethod
    def Testsome(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> list[int] | None:
        """Test for completion of some previously initiated requests; None if all are null."""
        active = _active(requests)
        if not active:
            return None
        _progress_unless_done(requests, active)
        return _retire_done(requests, statuses)

    @classmethod
    def waitany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, Any]:
        """Wait for any previously initiated request to complete; (index, object)."""
        index = _wait_any(requests)
        if index == UNDEFINED:
            fill_empty(status)
            return (UNDEFINED, None)
        return (index, requests[index]._retire(status))

    @classmethod
    def testany(
        cls, requests: Sequence[Request], status: Status | None = None
    ) -> tuple[int, bool, Any | None]:
        """Test for completion of any previously initiated request; (index, flag, object)."""
        active = _active(requests)
        if not active:
            fill_empty(status)
            return (UNDEFINED, True, None)
        _progress_unless_done(requests, active)
        for index in active:
            if requests[index]._core.complete:
                return (index, True, requests[index]._retire(status))
        return (UNDEFINED, False, None)

    @classmethod
    def waitall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list:
        """Wait for all previously initiated requests to complete; the received objects."""
        _wait_all(requests)
        return _retire_all(requests, range(len(requests)), statuses)

    @classmethod
    def testall(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> tuple[bool, list | None]:
        """Test for completion of all previously initiated requests; (flag, objects)."""
        _progress_unless_done(requests, _active(requests))
        if not all(request._done() for request in requests):
            return (False, None)
        return (True, _retire_all(requests, range(len(requests)), statuses))

    @classmethod
    def waitsome(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> tuple[list[int] | None, list | None]:
        """Wait for some previously initiated requests to complete; (indices, objects)."""
        if _wait_any(requests) == UNDEFINED:
            return (None, None)
        return _retire_done_objects(requests, statuses)

    @classmethod
    def testsome(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> tuple[list[int] | None, list | None]:
        """Test for completion of some previously initiated requests; (indices, objects)."""
        active = _active(requests)
        if not active:
            return (None, None)
        _progress_unless_done(requests, active)
        return _retire_done_objects(requests, statuses)


class Prequest(Request):
    """Persistent request handler."""

    __slots__ = ("_starter",)

    def __init__(self, request: Prequest | None = None) -> None:
        super().__init__(request)
        self._starter: Starter | None = None
        if isinstance(request, Prequest):
            self._starter = request._starter

    @classmethod
    def _persistent(cls, starter: Starter, comm: Communicator) -> Prequest:
        request = cls.__new__(cls)
        request._core = None
        request._comm = comm
        request._starter = starter
        return request

    def _is_null(self) -> bool:
        return self._starter is None

    def _release(self) -> None:
        self._core = None  # inactive, ready for the next Start

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Prequest) and not self._is_null():
            return self._starter is other._starter
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self._is_null():
            return "<Prequest REQUEST_NULL>"
        return f"<Prequest {'inactive' if self._core is None else 'active'}>"

    def Start(self) -> None:
        """Start a communication using a persistent request."""
        if self._starter is None:
            raise MPIException(ERR_REQUEST, "Prequest.Start: the request is REQUEST_NULL")
        if self._core is not None:
            raise MPIException(
                ERR_REQUEST,
                "Prequest.Start: the request is still active; complete it (Wait/Test) first",
            )
        self._core = self._starter()

    def start(self) -> None:
        """Start a communication using a persistent request."""
        self.Start()

    @classmethod
    def Startall(cls, requests: Sequence[Prequest]) -> None:
        """Start a collection of persistent requests."""
        for request in requests:
            if not isinstance(request, Prequest):
                raise TypeError(
                    f"Startall: expecting persistent requests (Prequest), not "
                    f"{type(request).__name__}"
                )
        for request in requests:
            request.Start()

    @classmethod
    def startall(cls, requests: Sequence[Prequest]) -> None:
        """Start a collection of persistent requests."""
        cls.Startall(requests)

    def Free(self) -> None:
        """Free a persistent request (an active round still completes)."""
        if self._starter is None:
            raise MPIException(ERR_REQUEST, "Request.Free: the request is REQUEST_NULL")
        self._starter = None
        self._core = None


REQUEST_NULL = Request()


# -- helpers of the many-request calls ---------------------------------------------------------


def _checked(requests: Sequence[Request]) -> Sequence[Request]:
    for request in requests:
        if not isinstance(request, Request):
            raise TypeError(f"expecting a sequence of Request, got a {type(request).__name__}")
    return requests


def _active(requests: Sequence[Request]) -> list[int]:
    """Indices of the requests with an operation in flight or completed but not reported."""
    return [i for i, request in enumerate(_checked(requests)) if request._core is not None]


def _progress_unless_done(requests: Sequence[Request], active: list[int]) -> None:
    """One progress pass when any active request is still pending (MPI's tests progress)."""
    for index in active:
        if not requests[index]._core.complete:
            requests[index]._comm.engine.progress()
            return


def _wait_any(requests: Sequence[Request]) -> int:
    """Progress until one active request completes; its index, or UNDEFINED if none is active."""
    active = _active(requests)
    if not active:
        return UNDEFINED
    cores = [(index, requests[index]._core) for index in active]
    for index, core in cores:
        if core.complete:
            return index
    found: list[int] = []

    def any_complete() -> bool:
        for index, core in cores:
            if core.complete:
                found.append(index)
                return True
        return False

    requests[active[0]]._comm.engine.wait_until(any_complete)
    return found[0]


def _wait_all(requests: Sequence[Request]) -> None:
    for index in _active(requests):
        requests[index]._wait_core()


def _status_slot(statuses: list[Status] | None, position: int) -> Status | None:
    if statuses is None:
        return None
    while len(statuses) <= position:
        statuses.append(Status())
    return statuses[position]


def _retire_all(
    requests: Sequence[Request], indices: Sequence[int], statuses: list[Status] | None
) -> list:
    """Retire every request; the first failure is raised after all are reported."""
    results, failure = [], None
    for position, index in enumerate(indices):
        try:
            results.append(requests[index]._retire(_status_slot(statuses, position)))
        except MPIException as error:
            results.append(None)
            failure = failure or error
    if failure is not None:
        raise failure
    return results


def _retire_done(requests: Sequence[Request], statuses: list[Status] | None) -> list[int]:
    done = [i for i in _active(requests) if requests[i]._core.complete]
    _retire_all(requests, done, statuses)
    return done


def _retire_done_objects(
    requests: Sequence[Request], statuses: list[Status] | None
) -> tuple[list[int], list]:
    done = [i for i in _active(requests) if requests[i]._core.complete]
    return done, _retire_all(requests, done, statuses)
