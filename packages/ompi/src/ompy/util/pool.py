"""A ``multiprocessing.pool.Pool`` look-alike over MPI workers: mpi4py's ``mpi4py.util.pool``.

:class:`Pool` runs its calls on an :class:`ompy.futures.MPIPoolExecutor` (so its workers are
spawned, or are the other ranks under ``python -m ompy.futures``); :class:`ThreadPool` on an
``ompy.futures.ThreadPoolExecutor``.  The asynchronous calls give :class:`AsyncResult`\\ s.
Why no helper thread for ``map_async``: its chunks are submitted at once and their futures
combined with :func:`ompy.futures.collect`, so the result is ready when the last chunk is.
"""

from __future__ import annotations

import itertools
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import CancelledError, Future
from typing import Any

from ompy import futures

__all__ = ["ApplyResult", "AsyncResult", "MapResult", "Pool", "ThreadPool"]

Callback = Callable[[Any], object] | None


class AsyncResult:
    """The result of an asynchronous call, as ``multiprocessing`` gives it."""

    def __init__(
        self, future: Future[Any], callback: Callback = None, error_callback: Callback = None
    ) -> None:
        self.future = future
        self._ready = threading.Event()

        def finished(done: Future[Any]) -> None:
            try:
                error = done.exception()
            except CancelledError:
                error = TimeoutError("the call was cancelled")
            try:
                if error is None and callback is not None:
                    callback(done.result())
                elif error is not None and error_callback is not None:
                    error_callback(error)
            finally:
                self._ready.set()

        future.add_done_callback(finished)

    def get(self, timeout: float | None = None) -> Any:
        """The result (raising the call's exception), waiting at most ``timeout`` seconds."""
        self.wait(timeout)
        if not self.ready():
            raise TimeoutError(f"the result did not arrive within {timeout} s")
        try:
            return self.future.result()
        except CancelledError:
            raise TimeoutError("the call was cancelled") from None

    def wait(self, timeout: float | None = None) -> None:
        """Wait until the result is there, at most ``timeout`` seconds."""
        self._ready.wait(timeout)

    def ready(self) -> bool:
        """Whether the call finished (and its callback ran)."""
        return self._ready.is_set()

    def successful(self) -> bool:
        """Whether the call finished without raising; ``ValueError`` if it has not finished."""
        if not self.ready():
            raise ValueError(f"{self!r} not ready")
        try:
            return self.future.exception() is None
        except CancelledError:
            return False


class ApplyResult(AsyncResult):
    """The result of :meth:`Pool.apply_async`."""


class MapResult(AsyncResult):
    """The result of :meth:`Pool.map_async` and :meth:`Pool.starmap_async`."""


def _run_chunk(func: Callable[..., Any], chunk: list[tuple[Any, ...]]) -> list[Any]:
    return [func(*args) for args in chunk]


def _flatten(lists: list[list[Any]]) -> list[Any]:
    return list(itertools.chain.from_iterable(lists))


class Pool:
    """A pool of MPI worker processes with ``multiprocessing.pool.Pool``'s methods.

    ``processes``: the number of workers (the executor's ``max_workers``); other keyword
    arguments go to the executor.  ``maxtasksperchild`` and ``context`` are not supported
    (a value other than None is ignored with a warning).
    """

    Executor: Callable[..., futures.MPIPoolExecutor] = futures.MPIPoolExecutor

    def __init__(
        self,
        processes: int | None = None,
        initializer: Callable[..., object] | None = None,
        initargs: Iterable[Any] = (),
        **kwargs: Any,
    ) -> None:
        if processes is not None and processes < 1:
            raise ValueError("number of processes must be at least 1")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        for name in ("maxtasksperchild", "context"):
            if kwargs.pop(name, None) is not None:
                warnings.warn(f"argument {name!r} is not supported", stacklevel=2)
        self.executor = self.Executor(
            processes, initializer=initializer, initargs=initargs, **kwargs
        )

    # -- one call --------------------------------------------------------------------------

    def apply(
        self, func: Callable[..., Any], args: Iterable[Any] = (), kwds: Mapping[str, Any] = {}
    ) -> Any:
        """``func(*args, **kwds)`` on a worker; its result."""
        return self.executor.submit(func, *args, **kwds).result()

    def apply_async(
        self,
        func: Callable[..., Any],
        args: Iterable[Any] = (),
        kwds: Mapping[str, Any] = {},
        callback: Callback = None,
        error_callback: Callback = None,
    ) -> ApplyResult:
        """Start ``func(*args, **kwds)`` on a worker."""
        future = self.executor.submit(func, *args, **kwds)
        return ApplyResult(future, callback, error_callback)

    # -- many calls ------------------------------------------------------------------------

    def _chunksize(self, items: list[Any], chunksize: int | None) -> int:
        """``chunksize``, or about four chunks per worker as ``multiprocessing`` chooses."""
        if chunksize is not None:
            if chunksize < 1:
                raise ValueError("chunksize must be >= 1")
            return chunksize
        workers = self.executor.num_workers or 1
        return max(1, -(-len(items) // (4 * workers)))

    def _starmap_future(
        self, func: Callable[..., Any], iterable: Iterable[Iterable[Any]], chunksize: int | None
    ) -> Future[Any]:
        items = [tuple(args) for args in iterable]
        size = self._chunksize(items, chunksize)
        chunks = [items[start : start + size] for start in range(0, len(items), size)]
        parts = [self.executor.submit(_run_chunk, func, chunk) for chunk in chunks]
        return futures.compose(futures.collect(parts), _flatten)

    def map(
        self, func: Callable[..., Any], iterable: Iterable[Any], chunksize: int | None = None
    ) -> list[Any]:
        """``list(map(func, iterable))`` with the calls on the workers."""
        return self._starmap_future(func, zip(iterable), chunksize).result()

    def map_async(
        self,
        func: Callable[..., Any],
        iterable: Iterable[Any],
        chunksize: int | None = None,
        callback: Callback = None,
        error_callback: Callback = None,
    ) -> MapResult:
        """Start :meth:`map`; ``callback`` gets the list of results."""
        future = self._starmap_future(func, zip(iterable), chunksize)
        return MapResult(future, callback, error_callback)

    def starmap(
        self,
        func: Callable[..., Any],
        iterable: Iterable[Iterable[Any]],
        chunksize: int | None = None,
    ) -> list[Any]:
        """``list(itertools.starmap(func, iterable))`` with the calls on the workers."""
        return self._starmap_future(func, iterable, chunksize).result()

    def starmap_async(
        self,
        func: Callable[..., Any],
        iterable: Iterable[Iterable[Any]],
        chunksize: int | None = None,
        callback: Callback = None,
        error_callback: Callback = None,
    ) -> MapResult:
        """Start :meth:`starmap`."""
        return MapResult(self._starmap_future(func, iterable, chunksize), callback, error_callback)

    def imap(
        self, func: Callable[..., Any], iterable: Iterable[Any], chunksize: int = 1
    ) -> Iterator[Any]:
        """The results of ``func`` over ``iterable``, in order, as they come."""
        return self.executor.map(func, iterable, chunksize=chunksize)

    def imap_unordered(
        self, func: Callable[..., Any], iterable: Iterable[Any], chunksize: int = 1
    ) -> Iterator[Any]:
        """The results of ``func`` over ``iterable``, in the order they finish."""
        return self.executor.map(func, iterable, chunksize=chunksize, unordered=True)

    def istarmap(
        self, func: Callable[..., Any], iterable: Iterable[Iterable[Any]], chunksize: int = 1
    ) -> Iterator[Any]:
        """Like :meth:`imap` with argument tuples."""
        return self.executor.starmap(func, iterable, chunksize=chunksize)

    def istarmap_unordered(
        self, func: Callable[..., Any], iterable: Iterable[Iterable[Any]], chunksize: int = 1
    ) -> Iterator[Any]:
        """Like :meth:`imap_unordered` with argument tuples."""
        return self.executor.starmap(func, iterable, chunksize=chunksize, unordered=True)

    # -- the end ---------------------------------------------------------------------------

    def close(self) -> None:
        """Accept no more calls (those submitted still run)."""
        self.executor.shutdown(wait=False)

    def terminate(self) -> None:
        """Accept no more calls and drop those not started."""
        self.executor.shutdown(wait=False, cancel_futures=True)

    def join(self) -> None:
        """Wait until the calls ran and the workers left."""
        self.executor.shutdown(wait=True)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class ThreadPool(Pool):
    """A :class:`Pool` whose calls run on threads of this process."""

    Executor = futures.ThreadPoolExecutor
