"""Each rank reports what it knows of every rank's architecture, as one JSON line.

``--env-rank N``: rank N sets ``OMPY_MCA_opal_arch_byteorder=big`` in its own environment
before MPI initializes (``ompy run`` has no per-rank ``--mca``; this is how a program gives one
rank its own parameter without ``opal_arch_byteorder_ranks``).  The report carries the modex
record every rank published (hex), which of them this rank must convert from (``foreign``), and
what it converts its own outgoing data to.
"""

import json
import os
import sys

if "--env-rank" in sys.argv:
    chosen = sys.argv[sys.argv.index("--env-rank") + 1]
    if os.environ.get("OMPY_RANK") == chosen:
        os.environ["OMPY_MCA_" + "opal_arch_byteorder"] = "big"  # MCA names are lower case

# Importing MPI initializes it: only after the parameter is set.
from ompy import MPI
from ompy.ompi.instance import default

world = MPI.COMM_WORLD
archs = default().archs
size = world.Get_size()
report = {
    "rank": world.Get_rank(),
    "records": [archs.of(rank).encode().hex() for rank in range(size)],
    "foreign": [
        None if archs.foreign(rank) is None else archs.foreign(rank).byteorder
        for rank in range(size)
    ],
    "outgoing": None if archs.outgoing() is None else archs.outgoing().byteorder,
    "memory": archs.memory.encode().hex(),
}
# Every rank's view must agree with what the others say of themselves.
views = world.allgather(report["records"])
report["agree"] = all(view == report["records"] for view in views)
print(json.dumps(report), flush=True)
