"""Combining futures: :func:`collect` (many into one) and :func:`compose` (chain a handler).

mpi4py's ``mpi4py.futures.util``.  Both return a new future of the input's class, so they work
for ``concurrent.futures`` futures of any executor, not only ours, and cancelling the new future
cancels what it waits for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

__all__ = ["collect", "compose"]


class _Collector:
    """Fills the list result of a :func:`collect` future as its inputs finish."""

    def __init__(self, inputs: list[Future[Any]]) -> None:
        self.lock = threading.Lock()
        self.results: list[Any] = [None] * len(inputs)
        #: Input future -> the positions it fills (one future may appear several times).
        self.waiting: dict[Future[Any], list[int]] = {}
        for index, future in enumerate(inputs):
            self.waiting.setdefault(future, []).append(index)
        self.output: Future[Any] = type(inputs[0])()
        self.output.add_done_callback(self._output_done)
        for future in list(self.waiting):
            future.add_done_callback(self._input_done)

    def _input_done(self, future: Future[Any]) -> None:
        # Decide under the lock, complete the output outside it: completing runs the output's
        # callbacks, one of which (``_output_done``) takes the lock too.
        with self.lock:
            if self.output.done() or future not in self.waiting:
                return
            if future.cancelled() or future.exception() is not None:
                finished = False
            else:
                for index in self.waiting.pop(future):
                    self.results[index] = future.result()
                finished = not self.waiting
                if not finished:
                    return
        if future.cancelled():
            self.output.cancel()
        elif not finished:
            error = future.exception()
            assert error is not None
            if self.output.set_running_or_notify_cancel():
                self.output.set_exception(error)
        elif self.output.set_running_or_notify_cancel():
            self.output.set_result(self.results)

    def _output_done(self, output: Future[Any]) -> None:
        with self.lock:
            pending, self.waiting = list(self.waiting), {}
        for future in pending:  # the collected result will never be used: stop its inputs
            future.cancel()
        if output.cancelled():
            output.set_running_or_notify_cancel()


def collect(fs: Iterable[Future[Any]]) -> Future[Any]:
    """A future whose result is the list of the results of ``fs``, in order.

    It fails with the first failure among ``fs``, is cancelled if one of them is, and
    cancelling it cancels those of ``fs`` still pending.
    """
    inputs = list(fs)
    if not inputs:
        empty: Future[Any] = Future()
        empty.set_result([])
        return empty
    return _Collector(inputs).output


def compose(
    future: Future[Any],
    resulthook: Callable[[Any], Any] | None = None,
    excepthook: Callable[[BaseException], Any] | None = None,
) -> Future[Any]:
    """A future completed from ``future`` through a handler.

    On success the new future's result is ``resulthook(result)`` (or the result itself); on
    failure ``excepthook(exception)`` decides: an exception it returns becomes the new future's
    exception, anything else its result (without ``excepthook`` the failure is passed on).
    A handler that raises fails the new future with that exception.  Cancelling the new future
    cancels ``future``; a cancelled ``future`` cancels the new one.
    """
    output: Future[Any] = type(future)()

    def forward_cancel(done: Future[Any]) -> None:
        if done.cancelled():
            done.set_running_or_notify_cancel()
            future.cancel()

    def complete(done: Future[Any]) -> None:
        if done.cancelled():
            output.cancel()
            return
        if output.done():
            return
        try:
            error = done.exception()
            if error is None:
                value = done.result()
                outcome = resulthook(value) if resulthook is not None else value
            else:
                outcome = excepthook(error) if excepthook is not None else error
        except BaseException as failure:
            output.set_exception(failure)
            return
        if isinstance(outcome, BaseException):
            output.set_exception(outcome)
        else:
            output.set_result(outcome)

    output.add_done_callback(forward_cancel)
    future.add_done_callback(complete)
    return output
