"""The worker side: apply an executor's setup, then run its calls until told to stop.

A worker takes one message at a time from any executor (``ANY_SOURCE``/``ANY_TAG`` on the
intercommunicator to the executor's process) and answers on the message's tag
(:mod:`._wire`).  Calls run in the worker's main thread, where :func:`get_comm_workers` gives
the intracommunicator of all the workers.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import types
from collections.abc import Iterator
from typing import Any

from ompy import MPI
from ompy.ompi.instance import current
from ompy.opal.progress import ProgressEngine

from . import _wire
from ._pools import transport
from ._state import state, workers_comm

#: The name the executor's main module runs under here (see ``_wire.MAIN_RUN_NAME``).
WORKER_RUN_NAME = _wire.MAIN_RUN_NAME


def _import_main(options: dict[str, Any]) -> None:
    """Run the executor's main module here (once), and make it this process's ``__main__``.

    Why: pickle sends a function of the program's main script as ``__main__.name``, which a
    worker can resolve only if its ``__main__`` is that script.
    """
    name, path = options.get("main_name"), options.get("main_path")
    init_globals = options.get("globals")
    worker_state = state()
    if worker_state.main_imported or (name is None and path is None and init_globals is None):
        return
    worker_state.main_imported = True
    worker_state.importing_main = True
    try:
        _run_main(name, path, init_globals)
    except BaseException as error:
        where = name if name is not None else path
        raise _wire.SetupError(
            f"the worker could not import the program's main module {where!r}: "
            f"{type(error).__name__}: {error}"
        ) from error
    finally:
        worker_state.importing_main = False


def _run_main(name: str | None, path: str | None, init_globals: dict[str, Any] | None) -> None:
    module = types.ModuleType(WORKER_RUN_NAME)
    if init_globals:
        module.__dict__.update(init_globals)
    if name is not None:
        module.__dict__.update(
            runpy.run_module(name, init_globals or None, WORKER_RUN_NAME, alter_sys=False)
        )
    elif path is not None:
        if not sys.flags.safe_path:
            sys.path[0] = os.path.realpath(os.path.dirname(path))
        module.__dict__.update(runpy.run_path(path, init_globals or None, WORKER_RUN_NAME))
    sys.modules["__main__"] = sys.modules[WORKER_RUN_NAME] = module


def setup(options: dict[str, Any]) -> None:
    """Apply an executor's options in this worker, then run its initializer (which may raise)."""
    sys.path.extend(options.get("path", ()))
    if options.get("wdir") is not None:
        os.chdir(options["wdir"])
    os.environ.update(options.get("env", {}))
    _import_main(options)
    initializer = options.get("initializer")
    if initializer is not None:
        initializer(*options.get("initargs", ()), **options.get("initkwargs", {}))


def _answer(message: Any, where: str) -> tuple[bool, Any]:
    kind = message[0]
    try:
        if kind == _wire.SETUP:
            setup(message[1])
            return True, None
        if kind == _wire.CALL:
            _, fn, args, kwargs = message
            return True, fn(*args, **kwargs)
        if kind == _wire.CALLS:
            return True, [_wire.pack(_call(*task, where=where), where) for task in message[1]]
        raise RuntimeError(f"ompy.futures worker: unknown message {kind!r}")
    except BaseException as error:
        return False, _wire.remote_error(error, where)


def _call(
    fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], *, where: str
) -> tuple[bool, Any]:
    """One call of a batch: its own reply, so that a failing call fails alone."""
    try:
        return True, fn(*args, **kwargs)
    except BaseException as error:
        return False, _wire.remote_error(error, where)


@contextlib.contextmanager
def idle_wait(engine: ProgressEngine) -> Iterator[None]:
    """Waits inside sleep on the transports at once instead of spinning first.

    Why: a worker waits for its next call for as long as the executor gives it none, and the
    progress engine's spin (``opal_progress_spin_count`` idle passes before it sleeps) is
    made for replies a few microseconds away.  With several workers and the executor's
    process on few cores, spinning workers take the cores the executor and the busy workers
    need (measured: 4 workers on 2 cores spent about 600 us of CPU per empty task spinning,
    against about 220 us sleeping on the descriptors).  The sleep ends as soon as a transport
    descriptor becomes readable or a shared-memory peer rings its doorbell.  Only this wait
    changes: the calls a task makes keep the engine's own setting.
    """
    spin_count = engine.spin_count
    engine.spin_count = 0
    try:
        yield
    finally:
        engine.spin_count = spin_count


def serve(comm: Any, workers: MPI.Intracomm) -> None:
    """Answer the executor's messages on the intercommunicator ``comm`` until ``STOP``."""
    status = MPI.Status()
    #: Per executor (tag): the transport its calls and replies travel on (see ``_pools``).
    transports: dict[int, Any] = {}
    rank, size = workers.Get_rank(), workers.Get_size()
    where = f"Worker {rank} of {size} on {MPI.Get_processor_name()}"
    engine = current("ompy.futures worker").engine
    with workers_comm(workers):
        while True:
            with idle_wait(engine):
                comm.Probe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
            source, tag = status.Get_source(), status.Get_tag()
            link = transports.get(tag, comm)
            try:
                message = link.recv(None, source, tag)
            except BaseException as error:
                reply: tuple[bool, Any] = (False, _wire.remote_error(error, where))
            else:
                if message[0] == _wire.STOP:
                    return
                reply = _answer(message, where)
                if message[0] == _wire.SETUP:
                    transports[tag] = transport(comm, message[1])
                del message
            try:
                request = _wire.send_any(link, reply, source, tag)
            except Exception as error:
                request = link.isend(_wire.failed_reply(error, where), source, tag)
            del reply
            request.wait()
