"""Prints, as one JSON line, what ``ps`` shows for this rank and for the process that forked it."""

import json
import os


def shown(pid: int | str) -> dict[str, str]:
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline, open(f"/proc/{pid}/comm") as comm:
        return {"args": cmdline.read().rstrip(b"\0").decode(), "comm": comm.read().strip()}


before_mpi = shown("self")
from ompy import MPI  # noqa: E402

print(
    json.dumps(
        {
            "rank": MPI.COMM_WORLD.Get_rank(),
            "before_mpi": before_mpi,
            "after_mpi": shown("self"),
            "parent": shown(os.getppid()),
        }
    ),
    flush=True,
)
