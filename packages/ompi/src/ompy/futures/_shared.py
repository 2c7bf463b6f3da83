"""The shared pool of ``python -m ompy.futures script.py``: every other rank is a worker.

Rank 0 runs the program; ranks 1.. serve the calls of every ``MPIPoolExecutor`` it creates,
over one intercommunicator made at start.  Each executor gets a tag of its own, all share the
idle workers, and the first setup a worker receives makes it import the program's main
module.  On a job of one rank there are no workers, and each executor runs its calls on a
thread (as mpi4py does).
"""

from __future__ import annotations

import itertools
from typing import Any

from ompy import MPI

from . import _pools, _worker
from ._state import state


class SharedPool:
    """Rank 0's side of the shared workers (installed in the process's futures state)."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.tags = itertools.count()
        self.idle = _pools.idle_slots(comm.Get_remote_size() if comm != MPI.COMM_NULL else 0)
        self.pools: list[_pools.Pool] = []

    def pool(self, options: dict[str, Any]) -> _pools.Pool:
        from .pool import _setup_options

        options = dict(options)
        if self.comm == MPI.COMM_NULL:
            options.pop("max_workers", None)
            made = _pools.Pool(_pools.thread_manager(1, options))
        else:
            manager = _pools.CommManager(
                self.comm, next(self.tags), self.idle, _setup_options(options), owns_comm=False
            )
            made = _pools.Pool(manager)
        self.pools.append(made)
        return made

    def close(self) -> None:
        """After the program: finish every executor, then stop the workers."""
        for pool in self.pools:
            pool.done()
        for pool in self.pools:
            pool.join()
        if self.comm != MPI.COMM_NULL:
            size = self.comm.Get_remote_size()
            requests = [self.comm.isend((_worker._wire.STOP,), worker, 0) for worker in range(size)]
            MPI.Request.Waitall(requests)
            self.comm.Free()


def run_shared(program: Any) -> None:
    """Collective over ``COMM_WORLD``: rank 0 runs ``program()``; the others serve it."""
    world = MPI.COMM_WORLD
    futures_state = state()
    if world.Get_size() == 1:
        futures_state.shared = SharedPool(MPI.COMM_NULL)
        try:
            program()
        finally:
            futures_state.shared.close()
            futures_state.shared = None
        return
    inter, local = _pools.split_off(world, 0)
    if world.Get_rank() != 0:
        try:
            _worker.serve(inter, local)
        finally:
            inter.Free()
            local.Free()
        return
    futures_state.shared = SharedPool(inter)
    try:
        program()
    finally:
        futures_state.shared.close()
        futures_state.shared = None
