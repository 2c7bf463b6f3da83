"""Prints MPI.UNIVERSE_SIZE as every rank sees it on COMM_WORLD and on a duplicate."""

import json

from ompy import MPI

world = MPI.COMM_WORLD
dup = world.Dup()
print(
    json.dumps(
        {
            "rank": world.Get_rank(),
            "universe": world.Get_attr(MPI.UNIVERSE_SIZE),
            "dup": dup.Get_attr(MPI.UNIVERSE_SIZE),
        }
    ),
    flush=True,
)
dup.Free()
