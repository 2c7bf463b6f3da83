"""Workers spawned for one executor: ``MPI.COMM_SELF.Spawn`` of ``python -m ompy.futures.server``.

The manager thread spawns them (so that ``submit`` never waits for it), then runs the pool over
the intercommunicator to them, and disconnects when the pool is done.  The number of workers is
``max_workers``, else ``OMPY_FUTURES_MAX_WORKERS``, else the universe size less the world
size (at least one).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from ompy import MPI

from . import _pools
from ._state import state

SERVER_MODULE = "ompy.futures.server"

#: Interpreter flags a worker inherits from this interpreter (``sys.flags`` name -> option).
_FLAGS = {
    "debug": "d",
    "optimize": "O",
    "dont_write_bytecode": "B",
    "no_user_site": "s",
    "no_site": "S",
    "ignore_environment": "E",
    "verbose": "v",
    "bytes_warning": "b",
    "quiet": "q",
    "isolated": "I",
    "safe_path": "P",
}


def python_flags() -> list[str]:
    """This interpreter's command-line flags, for the workers' interpreters."""
    flags = [
        f"-{option * value}"
        for name, option in _FLAGS.items()
        if (value := getattr(sys.flags, name, 0)) > 0
    ]
    flags += [f"-W{option}" for option in sys.warnoptions]
    for key, value in sys._xoptions.items():
        flags.append(f"-X{key}" if value is True else f"-X{key}={value}")
    return flags


def default_max_workers() -> int:
    configured = os.environ.get("OMPY_FUTURES_MAX_WORKERS")
    if configured is not None:
        try:
            count = int(configured)
        except ValueError:
            raise ValueError(f"OMPY_FUTURES_MAX_WORKERS={configured!r} is not an integer") from None
        if count < 1:
            raise ValueError(f"OMPY_FUTURES_MAX_WORKERS={configured!r} must be at least 1")
        return count
    universe = MPI.COMM_WORLD.Get_attr(MPI.UNIVERSE_SIZE)
    if universe is not None:
        return max(int(universe) - MPI.COMM_WORLD.Get_size(), 1)
    return 1


def spawn(options: dict[str, Any]) -> Any:
    """Start the workers; the intercommunicator to them."""
    python = options.pop("python_exe", None) or sys.executable
    args = [*python_flags(), *(options.pop("python_args", None) or ()), "-m", SERVER_MODULE]
    count = options.pop("max_workers", None) or default_max_workers()
    hints = options.pop("mpi_info", None) or {"soft": f"1:{count}"}
    info = MPI.Info.Create()
    try:
        info.update(hints)
        with state().serialized():
            spawner: Any = MPI.COMM_SELF
            return spawner.Spawn(python, args, count, info)
    finally:
        info.Free()


def _disconnect(comm: Any) -> None:
    comm.Disconnect()


def spawn_manager(options: dict[str, Any]) -> Callable[[_pools.Pool], None]:
    """A pool manager that spawns its workers first."""
    from .pool import _setup_options

    def manage(pool: _pools.Pool) -> None:
        try:
            comm = spawn(options)
        except Exception as error:  # the executor reports it as broken, with the cause
            pool.break_down(
                f"spawning the workers failed ({type(error).__name__}: {error}); without "
                "dynamic processes run the program under `python -m ompy.futures` or use "
                "MPICommExecutor"
            )
            return
        idle = _pools.idle_slots(comm.Get_remote_size())
        manager = _pools.CommManager(comm, 0, idle, _setup_options(options), release=_disconnect)
        manager(pool)

    return manage
