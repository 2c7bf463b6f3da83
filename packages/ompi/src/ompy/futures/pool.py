"""The executors: :class:`MPIPoolExecutor`, :class:`MPICommExecutor` and their relatives.

Where an ``MPIPoolExecutor``'s workers come from, in order:

1. under ``python -m ompy.futures`` (rank 0): the other ranks of the job, shared by every
   executor of the program (:mod:`._shared`);
2. made for it by :class:`MPICommExecutor`: the other ranks of a communicator;
3. otherwise: ``max_workers`` processes spawned with ``MPI.COMM_SELF.Spawn`` running
   ``python -m ompy.futures.server`` (needs dynamic process support in the MPI library).
"""

from __future__ import annotations

import collections
import functools
import itertools
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import BrokenExecutor, Executor, as_completed
from concurrent.futures import Future as FutureType
from typing import Any

from ompy import MPI

from . import _pools
from ._state import get_comm_workers, state

__all__ = [
    "MPICommExecutor",
    "MPIPoolExecutor",
    "ProcessPoolExecutor",
    "ThreadPoolExecutor",
    "get_comm_workers",
]

PoolFactory = Callable[["MPIPoolExecutor"], _pools.Pool]


class MPIPoolExecutor(Executor):
    """An executor whose calls run on MPI worker processes.

    ``max_workers``: how many workers to spawn (default: ``OMPY_FUTURES_MAX_WORKERS``, else
    the universe size less the world size, at least 1); ``initializer(*initargs)`` runs in each
    worker before its first call.  Keyword options, as mpi4py's: ``python_exe``,
    ``python_args``, ``mpi_info`` (spawning), ``globals`` (set in the workers' main module),
    ``main`` (False: do not import the program's main module in the workers), ``path``
    (appended to ``sys.path``), ``wdir``, ``env`` (updates ``os.environ``), ``use_pkl5``
    (send objects with :mod:`ompy.util.pkl5`), ``backoff`` (the longest pause while polling).
    """

    #: The class of the futures ``submit`` returns (mpi4py's attribute).
    Future = FutureType

    def __init__(
        self,
        max_workers: int | None = None,
        initializer: Callable[..., object] | None = None,
        initargs: Iterable[Any] = (),
        **kwargs: Any,
    ) -> None:
        if max_workers is not None:
            max_workers = int(max_workers)
            if max_workers <= 0:
                raise ValueError("max_workers must be greater than 0")
            kwargs["max_workers"] = max_workers
        if initializer is not None:
            if not callable(initializer):
                raise TypeError("initializer must be a callable")
            kwargs["initializer"] = initializer
            kwargs["initargs"] = tuple(initargs)
        self._options = kwargs
        self._lock = threading.Lock()
        self._shutdown = False
        self._pool: _pools.Pool | None = None
        self._make_pool: PoolFactory = _default_pool

    # -- the pool -------------------------------------------------------------------------

    def _bootstrap(self) -> _pools.Pool:
        if self._pool is None:
            pool = self._make_pool(self)
            # A forgotten executor still ends its pool when it is collected.
            weakref.finalize(self, pool.done)
            self._pool = pool
        return self._pool

    def _broken(self) -> str | None:
        return None if self._pool is None else self._pool.broken

    @property
    def _max_workers(self) -> int:
        return self.num_workers

    @property
    def num_workers(self) -> int:
        """How many worker processes run the calls (0 once shut down or broken)."""
        with self._lock:
            if self._shutdown or self._broken():
                return 0
            pool = self._bootstrap()
        pool.event.wait()
        return 0 if pool.broken else pool.size

    def bootup(self, wait: bool = True) -> MPIPoolExecutor:
        """Start the workers now rather than at the first call (``wait``: until ready)."""
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot bootup after shutdown")
            pool = self._bootstrap()
        if wait:
            pool.event.wait()
        return self

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> FutureType[Any]:
        """Schedule ``fn(*args, **kwargs)``; its :class:`~concurrent.futures.Future`."""
        with self._lock:
            broken = self._broken()
            if broken:
                raise BrokenExecutor(broken)
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            pool = self._bootstrap()
            future: FutureType[Any] = self.Future()
            pool.push((future, (fn, args, kwargs)))
            return future

    def map(
        self,
        fn: Callable[..., Any],
        *iterables: Iterable[Any],
        timeout: float | None = None,
        chunksize: int = 1,
        buffersize: int | None = None,
        unordered: bool = False,
    ) -> Iterator[Any]:
        """``map(fn, *iterables)`` run on the workers: the results in order (or as they come,
        with ``unordered``); ``chunksize`` calls travel together; with ``buffersize`` at most
        that many calls are submitted ahead of the results consumed."""
        return self.starmap(
            fn, zip(*iterables, strict=False), timeout, chunksize, buffersize, unordered
        )

    def starmap(  # noqa: PLR0917 (mpi4py's signature)
        self,
        fn: Callable[..., Any],
        iterable: Iterable[Iterable[Any]],
        timeout: float | None = None,
        chunksize: int = 1,
        buffersize: int | None = None,
        unordered: bool = False,
    ) -> Iterator[Any]:
        """``itertools.starmap(fn, iterable)`` run on the workers (see :meth:`map`)."""
        if chunksize < 1:
            raise ValueError("chunksize must be >= 1.")
        if buffersize is not None:
            if not isinstance(buffersize, int) or isinstance(buffersize, bool):
                raise TypeError("buffersize must be an integer or None")
            if buffersize < 1:
                raise ValueError("buffersize must be None or > 0")
            if unordered:
                raise ValueError("buffersize must be None if unordered")
        if chunksize == 1:
            return _results(self, fn, iter(iterable), timeout, buffersize, unordered)
        chunks = ((chunk,) for chunk in _chunks(iterable, chunksize))
        runs = _results(
            self, functools.partial(_run_chunk, fn), chunks, timeout, buffersize, unordered
        )
        return itertools.chain.from_iterable(runs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Accept no more calls; ``wait``: until the queued ones ran and the workers left;
        ``cancel_futures``: cancel the calls not started yet."""
        with self._lock:
            pool = self._pool
            if not self._shutdown:
                self._shutdown = True
                if pool is not None:
                    pool.done()
            if cancel_futures and pool is not None:
                pool.cancel()
            if wait:
                self._pool = None
        if wait and pool is not None:
            pool.join()


def _run_chunk(fn: Callable[..., Any], chunk: tuple[Any, ...]) -> list[Any]:
    return [fn(*args) for args in chunk]


def _chunks(iterable: Iterable[Any], size: int) -> Iterator[tuple[Any, ...]]:
    iterator = iter(iterable)
    while chunk := tuple(itertools.islice(iterator, size)):
        yield chunk


def _results(  # noqa: PLR0917
    executor: MPIPoolExecutor,
    fn: Callable[..., Any],
    arguments: Iterator[Any],
    timeout: float | None,
    buffersize: int | None,
    unordered: bool,
) -> Iterator[Any]:
    """Submit the calls now (up to ``buffersize`` of them); a generator of their results."""
    deadline = None if timeout is None else time.monotonic() + timeout
    ahead = arguments if buffersize is None else itertools.islice(arguments, buffersize)
    futures: collections.deque[FutureType[Any]] = collections.deque(
        executor.submit(fn, *args) for args in ahead
    )
    resubmit = weakref.ref(executor) if buffersize is not None else None
    del executor

    def remaining() -> float | None:
        return None if deadline is None else deadline - time.monotonic()

    def generate() -> Iterator[Any]:
        try:
            if unordered:
                for future in as_completed(set(futures), remaining()):
                    futures.remove(future)
                    yield future.result()
                return
            while futures:
                future = futures.popleft()
                try:
                    result = future.result(remaining())
                finally:
                    future.cancel()
                if resubmit is not None and (owner := resubmit()) is not None:
                    following = next(arguments, None)
                    if following is not None:
                        futures.append(owner.submit(fn, *following))
                    del owner
                del future
                yield result
        finally:
            while futures:
                futures.pop().cancel()

    return generate()


# -- where the workers come from -------------------------------------------------------------


def _default_pool(executor: MPIPoolExecutor) -> _pools.Pool:
    if state().importing_main:
        raise RuntimeError(
            "an MPIPoolExecutor was used while a worker imported the program's main module: "
            "put the program's main code under `if __name__ == '__main__':`"
        )
    shared = state().shared
    if shared is not None:
        return shared.pool(executor._options)
    return spawn_pool(executor._options)


def spawn_pool(options: dict[str, Any]) -> _pools.Pool:
    """Workers spawned with ``MPI.COMM_SELF.Spawn`` running ``python -m ompy.futures.server``."""
    from . import _spawn

    return _pools.Pool(_spawn.spawn_manager(dict(options)))


class ThreadPoolExecutor(MPIPoolExecutor):
    """An :class:`MPIPoolExecutor` whose calls run on threads of this process."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._make_pool = _thread_pool


def _thread_pool(executor: MPIPoolExecutor) -> _pools.Pool:
    options = dict(executor._options)
    return _pools.Pool(_pools.thread_manager(options.pop("max_workers", 1), options))


class ProcessPoolExecutor(MPIPoolExecutor):
    """An :class:`MPIPoolExecutor` whose workers are always spawned processes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._make_pool = lambda executor: spawn_pool(executor._options)


class MPICommExecutor:
    """Make one rank of a communicator an executor and the other ranks its workers.

    ::

        with MPICommExecutor(MPI.COMM_WORLD, root=0) as executor:
            if executor is not None:  # the root
                results = list(executor.map(f, range(100)))

    Collective over ``comm``: at the root the ``with`` target is an :class:`MPIPoolExecutor`;
    the other ranks serve its calls inside ``__enter__`` until the root leaves the ``with``
    block, and get None (their block body is skipped by the ``if``).  On a communicator of
    one process the calls run on a thread of the root.  Keyword options are those of
    :class:`MPIPoolExecutor`.
    """

    def __init__(self, comm: MPI.Intracomm | None = None, root: int = 0, **kwargs: Any) -> None:
        if comm is None:
            comm = MPI.COMM_WORLD
        if comm.Is_inter():
            raise ValueError("expecting an intracommunicator")
        if root < 0 or root >= comm.Get_size():
            raise ValueError("expecting root in range(comm.size)")
        shared = state().shared
        if shared is not None:  # under python -m ompy.futures the shared workers serve it
            comm, root = MPI.COMM_WORLD, MPI.COMM_WORLD.Get_rank()
        self._comm = comm
        self._root = root
        self._options = kwargs
        self._executor: MPIPoolExecutor | None = None
        self._entered = False

    def __enter__(self) -> MPIPoolExecutor | None:
        if self._entered:
            raise RuntimeError("MPICommExecutor: the context is already entered")
        self._entered = True
        comm, root = self._comm, self._root
        if state().shared is not None:
            executor = MPIPoolExecutor(**self._options)
            self._executor = executor
            return executor
        if comm.Get_size() == 1:
            executor = MPIPoolExecutor(**self._options)
            executor._make_pool = _thread_pool_of_one
            self._executor = executor
            return executor
        with state().serialized():
            inter, local = _pools.split_off(comm, root)
        if comm.Get_rank() != root:
            from . import _worker

            try:
                _worker.serve(inter, local)
            finally:
                inter.Free()
                local.Free()
            return None
        options = dict(self._options)
        options.pop("max_workers", None)
        options["main"] = False  # the workers run the same program: nothing to import
        executor = MPIPoolExecutor(**self._options)
        manager = _pools.CommManager(
            inter,
            0,
            _pools.idle_slots(inter.Get_remote_size()),
            _setup_options(options),
            release=_free,
        )
        executor._make_pool = lambda _: _pools.Pool(manager)
        # Started now, not at the first call: the other ranks serve until the pool tells them
        # to stop, which it must do even when the root leaves the block without a call.
        executor.bootup(wait=False)
        self._executor = executor
        return executor

    def __exit__(self, *exc_info: object) -> bool:
        executor, self._executor = self._executor, None
        self._entered = False
        if executor is None:
            return True  # a worker: the root's block ran, not ours
        executor.shutdown(wait=True)
        return False


def _thread_pool_of_one(executor: MPIPoolExecutor) -> _pools.Pool:
    options = dict(executor._options)
    options.pop("max_workers", None)
    return _pools.Pool(_pools.thread_manager(1, options))


def _free(comm: Any) -> None:
    comm.Free()


def _setup_options(options: dict[str, Any]) -> dict[str, Any]:
    """What a worker needs from an executor's options (see ``_worker.setup``)."""
    setup: dict[str, Any] = {
        key: options[key]
        for key in ("path", "wdir", "env", "globals", "initializer", "initargs", "initkwargs")
        if key in options
    }
    use_pkl5 = options.get("use_pkl5")
    if use_pkl5 is None:
        use_pkl5 = _pools.env_flag("OMPY_FUTURES_USE_PKL5")
    setup["use_pkl5"] = bool(use_pkl5)
    if options.get("main", True):
        setup.update(_pools.main_module_options())
    return setup
