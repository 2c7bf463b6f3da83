"""Run with ompy-coll-barrieronly installed: who serves what, and is the barrier real?

Prints one JSON report per rank: the providers of barrier/ibarrier/allreduce on COMM_WORLD and
of barrier on a duplicate, the component's barrier count, and how long each rank waited in a
barrier that rank 0 entered 2 s late.  Then runs the coll battery, which must pass with the
other collectives served by basic.
"""

import json
import sys
import time
from pathlib import Path

from ompy import MPI
from ompy.mca.coll import barrieronly

sys.path.insert(
    0, str(Path(__file__).resolve().parents[3] / "packages/components/coll-basic/tests")
)
import battery  # found through the path above

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
dup = comm.Dup()
before = barrieronly.BARRIERS
comm.Barrier()
if rank == 0:
    time.sleep(2.0)
start = time.monotonic()
comm.Barrier()
waited = time.monotonic() - start
dup.Barrier()  # served by basic: the component's count must not move
used = barrieronly.BARRIERS - before
battery.run_core(comm)
print(
    json.dumps(
        {
            "rank": rank,
            "world": {op: comm._c.coll.provider(op) for op in ("barrier", "ibarrier", "allreduce")},
            "dup": dup._c.coll.provider("barrier"),
            "barriers": used,
            "waited": waited,
        }
    ),
    flush=True,
)
dup.Free()
