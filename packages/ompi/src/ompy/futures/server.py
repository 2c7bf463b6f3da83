"""``python -m ompy.futures.server``: the program of a spawned worker of an ``MPIPoolExecutor``.

It serves the calls of the executor that spawned it (its parent) until told to stop, with
``COMM_WORLD`` (the spawned workers) as :func:`ompy.futures.get_comm_workers`; a failure here
ends the whole job, as ``python -m ompy`` does.
"""

from __future__ import annotations

from typing import Any


def main() -> None:
    from ompy import MPI
    from ompy.run import set_abort_status

    from . import _worker

    try:
        mpi: Any = MPI.Comm
        parent = mpi.Get_parent()
        if parent == MPI.COMM_NULL:
            raise RuntimeError(
                "ompy.futures.server: this process was not spawned by an MPIPoolExecutor "
                "(it has no parent communicator)"
            )
        _worker.serve(parent, MPI.COMM_WORLD)
        parent.Disconnect()
    except BaseException as error:
        set_abort_status(error if isinstance(error, SystemExit) else 1)
        raise


if __name__ == "__main__":
    main()
