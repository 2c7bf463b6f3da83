"""Run calls asynchronously on MPI processes: mpi4py's ``mpi4py.futures`` for ompy.

- :class:`MPIPoolExecutor`: a ``concurrent.futures`` executor whose workers are MPI processes,
  spawned (``MPI.Comm.Spawn``) or, under ``python -m ompy.futures script.py``, the other ranks
  of the job;
- :class:`MPICommExecutor`: a context manager that makes one rank of a communicator the
  executor and the others its workers (no spawning);
- :func:`get_comm_workers`: in a task, the intracommunicator of the workers;
- :func:`collect` and :func:`compose`: combining futures.

Callables and arguments go to the workers with pickle; what pickle cannot take by reference
(lambdas, functions defined inside functions) goes by value with cloudpickle.
"""

from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    FIRST_EXCEPTION,
    BrokenExecutor,
    CancelledError,
    Executor,
    Future,
    InvalidStateError,
    TimeoutError,
    as_completed,
    wait,
)

from .pool import (
    MPICommExecutor,
    MPIPoolExecutor,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    get_comm_workers,
)
from .util import collect, compose

__all__ = [
    "ALL_COMPLETED",
    "FIRST_COMPLETED",
    "FIRST_EXCEPTION",
    "BrokenExecutor",
    "CancelledError",
    "Executor",
    "Future",
    "InvalidStateError",
    "MPICommExecutor",
    "MPIPoolExecutor",
    "ProcessPoolExecutor",
    "ThreadPoolExecutor",
    "TimeoutError",
    "as_completed",
    "collect",
    "compose",
    "get_comm_workers",
    "wait",
]
