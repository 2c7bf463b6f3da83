"""Per-process state of ``ompy.futures``, kept on the MPI instance (``Instance.helpers``).

- the shared pool of ``python -m ompy.futures`` while the program runs (rank 0 only);
- per thread, the intracommunicator of the workers a task runs on (:func:`get_comm_workers`);
- whether this worker process already imported the main module of its executor;
- a lock that serialises the executors' MPI calls when MPI is not ``THREAD_MULTIPLE``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import attrs

from ompy import MPI
from ompy.ompi.instance import current

_KEY = "ompy.futures"


@attrs.define
class FuturesState:
    shared: Any = None
    local: threading.local = attrs.field(factory=threading.local)
    main_imported: bool = False
    #: A worker is running the executor's main module (an executor made now is a mistake).
    importing_main: bool = False
    mpi_lock: threading.RLock = attrs.field(factory=threading.RLock)
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    #: The pools whose manager threads run, told to finish when the main thread ends.
    pools: set[Any] = attrs.field(factory=set)
    exit_hook: bool = False

    @contextlib.contextmanager
    def serialized(self) -> Iterator[None]:
        """Hold the MPI lock around a call unless MPI takes calls from any thread at once."""
        if MPI.Query_thread() >= MPI.THREAD_MULTIPLE:
            yield
            return
        with self.mpi_lock:
            yield


def state() -> FuturesState:
    """This process's state (MPI must be initialized: the executors run over it)."""
    helpers = current("ompy.futures").helpers
    found = helpers.get(_KEY)
    if found is None:
        found = helpers.setdefault(_KEY, FuturesState())
    assert isinstance(found, FuturesState)
    return found


@contextlib.contextmanager
def workers_comm(comm: MPI.Intracomm) -> Iterator[None]:
    """Make ``comm`` what :func:`get_comm_workers` returns in this thread, while inside."""
    local = state().local
    previous = getattr(local, "comm", None)
    local.comm = comm
    try:
        yield
    finally:
        local.comm = previous


def get_comm_workers() -> MPI.Intracomm:
    """The intracommunicator of the workers the calling task runs on.

    Raises ``RuntimeError`` outside a task (the executor's own process has no such
    communicator).
    """
    comm = getattr(state().local, "comm", None)
    if comm is None:
        raise RuntimeError(
            "get_comm_workers: communicator is not accessible (call it from a task that runs "
            "on an executor's worker)"
        )
    assert isinstance(comm, MPI.Intracomm)
    return comm
