"""Print what this rank published in the modex, key by key, in bytes (one JSON line per rank).

Used by ``launch_bench.py`` to check the modex-size model of ``docs/multi-host.md``; reads
only this rank's own values (the launcher holds every rank's, so ``N`` times these).
"""

import json
import os

from ompy import MPI
from ompy.ompi.instance import current

KEYS = ("btl.tcp.1", "btl.sm.card", "opal.arch")

comm = MPI.COMM_WORLD
modex = current("modex_sizes").runtime.modex
sizes = {}
for key in KEYS:
    try:
        value = modex.get(comm.rank, key)
    except Exception as error:  # a transport not in use publishes nothing: say so
        sizes[key] = f"none ({type(error).__name__})"
        continue
    sizes[key] = len(value)
comm.Barrier()
print(json.dumps({"rank": comm.rank, "host": os.uname().nodename, "sizes": sizes}), flush=True)
