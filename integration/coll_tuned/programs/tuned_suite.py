"""The coll/tuned battery in one job of any size; prints one JSON report per rank.

Run as ``ompy run -n N python tuned_suite.py``: every algorithm of the component, forced one
by one, on COMM_WORLD and on its halves (``tuned_battery.run_battery``), then the operations
as the API serves them (whatever the coll parameters chose) on a few rendezvous-sized vectors.
"""

import json
import sys
from pathlib import Path

import numpy as np

from ompy import MPI

TESTS = Path(__file__).resolve().parents[3] / "packages" / "components" / "coll-tuned" / "tests"
sys.path.insert(0, str(TESTS))
import tuned_battery  # noqa: E402 (found through the path above)

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
passed = tuned_battery.run_battery(comm)

# Through the API and the communicator's table, long enough to take the rendezvous path.
for count in (100_000, 300_001):
    mine = np.arange(count, dtype="d") + rank
    out = np.empty(count)
    comm.Allreduce(mine, out, op=MPI.SUM)
    want = np.arange(count, dtype="d") * size + size * (size - 1) / 2
    assert np.array_equal(out, want), f"Allreduce count={count}"
    buf = np.arange(count, dtype="d") if rank == 0 else np.zeros(count)
    comm.Bcast(buf, root=0)
    assert np.array_equal(buf, np.arange(count, dtype="d")), f"Bcast count={count}"
    passed.append(f"api:{count}")

provider = comm._c.coll.provider("allreduce")
print(json.dumps({"rank": rank, "passed": passed, "allreduce_by": provider}), flush=True)
