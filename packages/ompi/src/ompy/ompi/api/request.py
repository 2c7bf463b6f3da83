"""``MPI.Request``, ``MPI.Prequest``, ``MPI.Grequest``: handles on operations, and completion.

A request handle refers to one operation (a PML request, a collective schedule, a composite such
as a pickled receive, or a user's generalized request) until it completes: then, as in mpi4py,
a completed ordinary request becomes ``REQUEST_NULL`` in place (the handle object itself, so a
tuple of requests works as well as a list), and a persistent request becomes inactive (``Start``
reuses it).  Null and inactive requests count as already complete with an empty status in every
wait and test.  Waits loop over the progress engine of the request's communicator (of the
process instance, for generalized requests).

The many-request calls follow mpi4py's rules for ``statuses``: a list shorter than the number of
statuses reported is extended with new ``Status`` objects, and its first ``len(requests)``
entries are overwritten, with the empty status where nothing was reported.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, Self

from ompy.opal.progress import ProgressEngine

from .. import instance as instances
from ..completion import CoreRequest
from ..constants import UNDEFINED
from ..errors import ERR_OTHER, ERR_REQUEST
from ..errors import Exception as MPIException
from ..handle import Handle, predefine
from ..status import Status
from .communicator import Communicator
from .errhandler import RequestErrhandlers
from .partition_calls import PartitionedOps
from .transfers import fill_empty, fill_status

#: Starts one round of a persistent request: returns the new operation.
Starter = Callable[[], Any]


class Progressing(Protocol):
    """What a request waits through: a communicator or, for generalized requests, an instance."""

    @property
    def engine(self) -> ProgressEngine: ...


class Request(RequestErrhandlers, Handle, referent="_core"):
    """Request handler."""

    __slots__ = ("_comm", "_core")

    _core: Any
    _comm: Progressing | None

    @classmethod
    def _of(cls, core: Any, comm: Progressing | None) -> Request:
        # object.__new__, not Handle.__new__: every send and receive makes one (hot path).
        request = object.__new__(cls)
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

    def _instance_for_handles(self) -> Any:
        comm = self._comm
        if isinstance(comm, Communicator):
            return comm.instance
        return super()._instance_for_handles()

    def _free(self) -> None:
        self.Free()

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
        self._engine().progress()
        return core.complete

    def _engine(self) -> ProgressEngine:
        """The progress engine that completes this request's operation.

        Only an operation still pending needs it, and every such operation was started on a
        communicator (those without one, ``PROC_NULL`` receives of ``MESSAGE_NO_PROC``, are
        born complete).
        """
        comm = self._comm
        if comm is None:
            raise MPIException(
                ERR_REQUEST, f"{self!r} is pending but belongs to no communicator to progress"
            )
        return comm.engine

    def _done(self) -> bool:
        core = self._core
        return core is None or core.complete

    def _wait_core(self) -> None:
        core = self._core
        if core is not None and not core.complete:
            self._engine().wait_until(lambda: core.complete)

    def _retire(self, status: Status | None) -> Any:
        """Report a completed request: fill ``status``, release the handle, raise or return."""
        core = self._core
        if core is None:
            fill_empty(status)
            return None
        if type(core) is GeneralizedCore:
            self._release()
            return core.retire(status)
        fill_status(status, core)
        self._release()
        if core.exception is not None:
            raise core.exception
        return core.result

    def _peek(self, status: Status | None) -> None:
        """Fill ``status`` from a completed request without releasing it (``Get_status``)."""
        core = self._core
        if core is None:
            fill_empty(status)
        elif type(core) is GeneralizedCore:
            core.query(status)
        else:
            fill_status(status, core)

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
        if not self._test_core():
            return False
        self._peek(status)
        return True

    def Cancel(self) -> None:
        """Cancel a request.

        A receive not yet matched is cancelled; a send is cancelled if the PML can still
        retract it (else the PML says why, as an ``MPI.Exception``); a generalized request
        calls its ``cancel_fn``.  A cancelled request still has to be completed (Wait/Test/Free),
        and its status then says ``Is_cancelled()``.
        """
        core, comm = self._core, self._comm
        if core is None:
            return
        if comm is None:
            core.cancel()
            return
        with comm.engine.lock:  # THREAD_MULTIPLE: a cancel changes the PML's matching state
            core.cancel()

    def Free(self) -> None:
        """Free a communication request (the operation itself still completes)."""
        core = self._core
        if core is None:
            raise MPIException(ERR_REQUEST, "Request.Free: the request is REQUEST_NULL")
        self._core = None
        if type(core) is GeneralizedCore:
            core.release_handle()

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
        return _waitany(_listed(requests), status)[0]

    @classmethod
    def Testany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, bool]:
        """Test for completion of any previously initiated request."""
        index, flag, _obj = _testany(_listed(requests), status)
        return (index, flag)

    @classmethod
    def Get_status_any(
        cls, requests: Sequence[Request], status: Status | None = None
    ) -> tuple[int, bool]:
        """Non-destructive test for the completion of any requests."""
        listed = _listed(requests)
        active = _active(listed)
        if not active:
            fill_empty(status)
            return (UNDEFINED, True)
        _progress_unless_done(listed, active)
        for index in active:
            if listed[index]._core.complete:
                listed[index]._peek(status)
                return (index, True)
        return (UNDEFINED, False)

    @classmethod
    def Waitall(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> Literal[True]:
        """Wait for all previously initiated requests to complete."""
        _waitall(_listed(requests), statuses)
        return True

    @classmethod
    def Testall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> bool:
        """Test for completion of all previously initiated requests."""
        return _testall(_listed(requests), statuses) is not None

    @classmethod
    def Get_status_all(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> bool:
        """Non-destructive test for the completion of all requests."""
        listed = _listed(requests)
        report = _report(statuses, len(listed))
        _progress_unless_done(listed, _active(listed))
        if not all(request._done() for request in listed):
            report.store(len(listed))
            return False
        for position, request in enumerate(listed):
            request._peek(report.slot(position))
        report.store(len(listed))
        return True

    @classmethod
    def Waitsome(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> list[int] | None:
        """Wait for some previously initiated requests to complete; None if all are null."""
        return _some(_listed(requests), statuses, wait=True)[0]

    @classmethod
    def Testsome(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> list[int] | None:
        """Test for completion of some previously initiated requests; None if all are null."""
        return _some(_listed(requests), statuses, wait=False)[0]

    @classmethod
    def Get_status_some(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> list[int] | None:
        """Non-destructive test for completion of some requests; None if all are null."""
        listed = _listed(requests)
        active = _active(listed)
        report = _report(statuses, len(listed))
        if not active:
            report.store(UNDEFINED)
            return None
        _progress_unless_done(listed, active)
        done = [index for index in active if listed[index]._core.complete]
        for position, index in enumerate(done):
            listed[index]._peek(report.slot(position))
        report.store(len(done))
        return done

    @classmethod
    def waitany(cls, requests: Sequence[Request], status: Status | None = None) -> tuple[int, Any]:
        """Wait for any previously initiated request to complete; (index, object)."""
        return _waitany(_listed(requests), status)

    @classmethod
    def testany(
        cls, requests: Sequence[Request], status: Status | None = None
    ) -> tuple[int, bool, Any | None]:
        """Test for completion of any previously initiated request; (index, flag, object)."""
        return _testany(_listed(requests), status)

    @classmethod
    def get_status_any(
        cls, requests: Sequence[Request], status: Status | None = None
    ) -> tuple[int, bool]:
        """Non-destructive test for the completion of any requests."""
        return Request.Get_status_any(requests, status)

    @classmethod
    def waitall(cls, requests: Sequence[Request], statuses: list[Status] | None = None) -> list:
        """Wait for all previously initiated requests to complete; the received objects."""
        return _waitall(_listed(requests), statuses)

    @classmethod
    def testall(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> tuple[bool, list | None]:
        """Test for completion of all previously initiated requests; (flag, objects)."""
        objects = _testall(_listed(requests), statuses)
        return (objects is not None, objects)

    @classmethod
    def get_status_all(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> bool:
        """Non-destructive test for the completion of all requests."""
        return Request.Get_status_all(requests, statuses)

    @classmethod
    def waitsome(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> tuple[list[int] | None, list | None]:
        """Wait for some previously initiated requests to complete; (indices, objects)."""
        return _some(_listed(requests), statuses, wait=True)

    @classmethod
    def testsome(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> tuple[list[int] | None, list | None]:
        """Test for completion of some previously initiated requests; (indices, objects)."""
        return _some(_listed(requests), statuses, wait=False)

    @classmethod
    def get_status_some(
        cls, requests: Sequence[Request], statuses: list[Status] | None = None
    ) -> list[int] | None:
        """Non-destructive test for completion of some requests."""
        return Request.Get_status_some(requests, statuses)


class Prequest(PartitionedOps, Request):
    """Persistent request handler."""

    __slots__ = ("_on_free", "_starter")

    _starter: Starter | None
    #: Run by ``Free`` with the active operation (None when inactive) before the handle is
    #: released; it may refuse (raise).  Persistent collectives give their resources back.
    _on_free: Callable[[Any], None] | None

    def __new__(cls, obj: Handle | None = None) -> Self:
        if obj is not None and obj and not isinstance(obj, Prequest):
            raise TypeError(f"Prequest() refers to a Prequest, not {type(obj).__name__}")
        return super().__new__(cls, obj)

    @classmethod
    def _persistent(
        cls,
        starter: Starter,
        comm: Progressing,
        on_free: Callable[[Any], None] | None = None,
    ) -> Prequest:
        request = object.__new__(cls)
        request._core = None
        request._comm = comm
        request._starter = starter
        request._on_free = on_free
        return request

    def _is_null(self) -> bool:
        return self._starter is None

    def _referent(self) -> object:
        return self._starter  # a persistent request is its starter, active or not

    def _release(self) -> None:
        self._core = None  # inactive, ready for the next Start

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Prequest) and not self._is_null():
            return self._starter is other._starter
        return super().__eq__(other)

    __hash__ = None

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
        persistent: list[Prequest] = []
        for request in _listed(requests):
            if not isinstance(request, Prequest):
                raise TypeError(
                    f"Startall: expecting persistent requests (Prequest), not "
                    f"{type(request).__name__}"
                )
            persistent.append(request)
        for request in persistent:
            request.Start()

    @classmethod
    def startall(cls, requests: Sequence[Prequest]) -> None:
        """Start a collection of persistent requests."""
        cls.Startall(requests)

    def Free(self) -> None:
        """Free a persistent request (an active round still completes)."""
        if self._starter is None:
            raise MPIException(ERR_REQUEST, "Request.Free: the request is REQUEST_NULL")
        on_free = self._on_free
        if on_free is not None:
            on_free(self._core)
            self._on_free = None
        self._starter = None
        self._core = None


# -- generalized requests ----------------------------------------------------------------------


class GeneralizedCore(CoreRequest):
    """The operation behind a ``Grequest``: the user's callbacks and who completed it.

    MPI's rules: ``query_fn(status, *args, **kwargs)`` fills the status each time the request is
    reported (Wait/Test/Get_status); ``free_fn(*args, **kwargs)`` runs once, when the handle is
    released after completion (or at completion, if the handle was freed first);
    ``cancel_fn(completed, *args, **kwargs)`` runs on every Cancel.  An exception a callback
    raises becomes an ``MPI.Exception`` of the same error class (``ERR_OTHER`` if it was not an
    MPI error), raised by the call that ran it, after its traceback is printed to stderr.
    """

    __slots__ = (
        "args",
        "cancel_fn",
        "engine",
        "free_fn",
        "freed",
        "handle_released",
        "kwargs",
        "query_fn",
        "result",
    )

    def __init__(
        self,
        engine: Any,
        *,
        query_fn: Callable[..., None] | None,
        free_fn: Callable[..., None] | None,
        cancel_fn: Callable[..., None] | None,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        super().__init__()
        self.engine = engine
        self.query_fn = query_fn
        self.free_fn = free_fn
        self.cancel_fn = cancel_fn
        self.args = args
        self.kwargs = kwargs
        self.result: Any = None
        self.freed = False  # free_fn has run
        self.handle_released = False

    def _call(self, what: str, function: Callable[..., None], *first: Any) -> None:
        try:
            function(*first, *self.args, **self.kwargs)
        except Exception as error:
            # As mpi4py: the callback's traceback goes to stderr (the error may surface far from
            # the callback, in a Waitall), and the call that ran it raises an MPI.Exception.
            traceback.print_exception(error, file=sys.stderr)
            if isinstance(error, MPIException):
                raise
            raise MPIException(
                ERR_OTHER, f"the generalized request's {what} raised {error!r}"
            ) from error

    def query(self, status: Status | None) -> None:
        """The status MPI reports: empty, then what ``query_fn`` sets."""
        report = Status()
        if self.query_fn is not None:
            self._call("query_fn", self.query_fn, report)
            if self.cancel_fn is None:
                report.Set_cancelled(False)
        if status is not None:
            status._copy_from(report)

    def retire(self, status: Status | None) -> Any:
        """Report the completed request and release it: query, then free; the object."""
        result, self.result = self.result, None
        try:
            self.query(status)
        finally:
            self.release_handle()
        return result

    def release_handle(self) -> None:
        """The user let go of the handle: ``free_fn`` runs now, or once the request completes."""
        self.handle_released = True
        if self.complete:
            self._free()

    def _free(self) -> None:
        if self.freed:
            return
        self.freed = True
        if self.free_fn is not None:
            self._call("free_fn", self.free_fn)

    def cancel(self) -> None:
        if self.cancel_fn is not None:
            self._call("cancel_fn", self.cancel_fn, self.complete)

    def mark_complete(self) -> None:
        if self.complete:
            raise MPIException(
                ERR_REQUEST, "Grequest.Complete: the generalized request is already complete"
            )
        self.finish()
        self.engine.wakeup()  # a wait in another thread may be sleeping
        if self.handle_released:
            self._free()


class Grequest(Request):
    """Generalized request handler."""

    __slots__ = ("_greq",)

    _greq: GeneralizedCore | None

    def __new__(cls, obj: Handle | None = None) -> Self:
        if obj is not None and obj and not isinstance(obj, Grequest):
            raise TypeError(f"Grequest() refers to a Grequest, not {type(obj).__name__}")
        return super().__new__(cls, obj)

    def _instance_for_handles(self) -> Any:
        return self._comm  # a generalized request waits through its instance itself

    @classmethod
    def Start(
        cls,
        query_fn: Callable[..., None] | None = None,
        free_fn: Callable[..., None] | None = None,
        cancel_fn: Callable[..., None] | None = None,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> Grequest:
        """Create and return a user-defined request."""
        for name, function in (
            ("query_fn", query_fn),
            ("free_fn", free_fn),
            ("cancel_fn", cancel_fn),
        ):
            if function is not None and not callable(function):
                kind = type(function).__name__
                raise TypeError(f"Grequest.Start: {name} must be callable or None, not {kind}")
        owner = instances.current("Grequest.Start")
        core = GeneralizedCore(
            owner.engine,
            query_fn=query_fn,
            free_fn=free_fn,
            cancel_fn=cancel_fn,
            args=tuple(args) if args is not None else (),
            kwargs=dict(kwargs) if kwargs is not None else {},
        )
        request = cls.__new__(cls)
        request._core = core
        request._comm = owner
        request._greq = core
        return request

    def Complete(self) -> None:
        """Notify that a user-defined request is complete."""
        core = self._greq
        if core is None:
            raise MPIException(ERR_REQUEST, "Grequest.Complete: the request is REQUEST_NULL")
        core.mark_complete()

    def complete(self, obj: Any = None) -> None:
        """Notify that a user-defined request is complete; ``obj`` is what ``wait`` returns."""
        core = self._greq
        if core is not None:
            core.result = obj
        self.Complete()


#: Null request handle.
REQUEST_NULL = predefine(Request(), "REQUEST_NULL", 0)


# -- the many-request calls --------------------------------------------------------------------


def _listed(requests: Sequence[Request]) -> list[Request]:
    """The requests of a sequence (anything with ``len`` and indexing, as mpi4py takes)."""
    try:
        if type(requests) is list or type(requests) is tuple:
            listed = list(requests)
        else:
            listed = [requests[index] for index in range(len(requests))]
    except (TypeError, KeyError):
        raise TypeError(
            f"expecting a sequence of Request (a list or tuple), not {type(requests).__name__}"
        ) from None
    for request in listed:
        if not isinstance(request, Request):
            raise TypeError(f"expecting a sequence of Request, got a {type(request).__name__}")
    return listed


class _Report:
    """The statuses a many-request call reports, stored into the caller's list at the end.

    Without a caller's list it holds nothing and does nothing: one shared instance serves
    (``_report``), so the common ``Waitall(requests)`` builds no object for it.
    """

    __slots__ = ("count", "filled", "statuses")

    def __init__(self, statuses: Sequence[Status] | None, count: int) -> None:
        self.statuses = statuses
        self.count = count
        self.filled = None if statuses is None else [Status() for _ in range(count)]

    def slot(self, position: int) -> Status | None:
        return None if self.filled is None else self.filled[position]

    def store(self, outcount: int) -> None:
        """Extend the caller's list to ``outcount`` entries and copy the reported statuses."""
        statuses, filled = self.statuses, self.filled
        if statuses is None or filled is None or outcount == UNDEFINED:
            return
        size = len(statuses)
        if outcount > size and isinstance(statuses, list):
            statuses.extend(Status() for _ in range(size, outcount))
            size = outcount
        for position in range(min(self.count, size)):
            target = statuses[position]
            if not isinstance(target, Status):
                raise TypeError(f"expecting a list of Status, got a {type(target).__name__}")
            target._copy_from(filled[position])


_NOTHING_TO_REPORT = _Report(None, 0)


def _report(statuses: Sequence[Status] | None, count: int) -> _Report:
    return _NOTHING_TO_REPORT if statuses is None else _Report(statuses, count)


def _active(requests: list[Request]) -> list[int]:
    """Indices of the requests with an operation in flight or completed but not reported."""
    return [index for index, request in enumerate(requests) if request._core is not None]


def _engines(requests: list[Request], active: list[int]) -> list[ProgressEngine]:
    """The distinct progress engines of the pending requests (one, but for test worlds with an
    instance per rank and generalized requests on the default instance)."""
    engines: list[ProgressEngine] = []
    for index in active:
        request = requests[index]
        if not request._core.complete:
            engine = request._engine()
            if engine not in engines:
                engines.append(engine)
    return engines


def _progress_unless_done(requests: list[Request], active: list[int]) -> None:
    """One progress pass when any active request is still pending (MPI's tests progress)."""
    for engine in _engines(requests, active):
        engine.progress()


def _wait_any(requests: list[Request]) -> int:
    """Progress until one active request completes; its index, or UNDEFINED if none is active."""
    active = _active(requests)
    if not active:
        return UNDEFINED
    cores = [(index, requests[index]._core) for index in active]
    for index, core in cores:
        if core.complete:
            return index
    found: list[int] = []
    first, *others = _engines(requests, active)

    def any_complete() -> bool:
        for engine in others:
            engine.progress()
        for index, core in cores:
            if core.complete:
                found.append(index)
                return True
        return False

    first.wait_until(any_complete)
    return found[0]


def _retire_each(requests: list[Request], indices: Sequence[int], report: _Report) -> list:
    """Retire every request; the first failure is raised after all are reported."""
    results, failure = [], None
    for position, index in enumerate(indices):
        try:
            results.append(requests[index]._retire(report.slot(position)))
        except MPIException as error:
            results.append(None)
            failure = failure or error
    if failure is not None:
        raise failure
    return results


def _waitany(requests: list[Request], status: Status | None) -> tuple[int, Any]:
    index = _wait_any(requests)
    if index == UNDEFINED:
        fill_empty(status)
        return (UNDEFINED, None)
    return (index, requests[index]._retire(status))


def _testany(requests: list[Request], status: Status | None) -> tuple[int, bool, Any]:
    active = _active(requests)
    if not active:
        fill_empty(status)
        return (UNDEFINED, True, None)
    _progress_unless_done(requests, active)
    for index in active:
        if requests[index]._core.complete:
            return (index, True, requests[index]._retire(status))
    return (UNDEFINED, False, None)


def _waitall(requests: list[Request], statuses: Sequence[Status] | None) -> list:
    report = _report(statuses, len(requests))
    try:
        for index in _active(requests):
            requests[index]._wait_core()
        return _retire_each(requests, range(len(requests)), report)
    finally:
        report.store(len(requests))


def _testall(requests: list[Request], statuses: Sequence[Status] | None) -> list | None:
    """The objects if every request is complete (then all are retired), else None."""
    report = _report(statuses, len(requests))
    try:
        _progress_unless_done(requests, _active(requests))
        if not all(request._done() for request in requests):
            return None
        return _retire_each(requests, range(len(requests)), report)
    finally:
        report.store(len(requests))


def _some(
    requests: list[Request], statuses: Sequence[Status] | None, *, wait: bool
) -> tuple[list[int] | None, list | None]:
    """Waitsome/Testsome: (indices, objects) of the completed requests; (None, None) if none
    is active."""
    report = _report(statuses, len(requests))
    active = _active(requests)
    if not active:
        report.store(UNDEFINED)
        return (None, None)
    if wait:
        _wait_any(requests)
    else:
        _progress_unless_done(requests, active)
    done = [index for index in active if requests[index]._core.complete]
    try:
        return (done, _retire_each(requests, done, report))
    finally:
        report.store(len(done))
