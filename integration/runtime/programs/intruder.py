"""Rank 0 tries to join its own job with a wrong secret; it must be refused, then it fences."""

import os

from ompy.orte.control import AuthenticationError, ControlClient, ControlError
from ompy.orte.runtime import init

runtime = init()
if runtime.identity.rank == 0:
    host, port = os.environ["OMPY_SERVER"].rsplit(":", 1)
    try:
        ControlClient.connect(
            (host, int(port)), b"w" * 32, runtime.identity.jobid, 1, pid=os.getpid(), host="x"
        )
    except (AuthenticationError, ControlError) as error:
        print(f"refused: {type(error).__name__}", flush=True)
    else:
        print("accepted a wrong secret", flush=True)
runtime.modex.fence()
runtime.finalize()
