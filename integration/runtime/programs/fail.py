"""Rank FAIL_RANK fails as FAIL_HOW says once every rank is running; the others wait in a fence."""

import os
import signal
import sys
import time

from ompy.orte.runtime import init

runtime = init()
rank = runtime.identity.rank
print(f"rank {rank} ready", flush=True)
if rank == int(os.environ.get("FAIL_RANK", "-1")):
    how = os.environ["FAIL_HOW"]
    time.sleep(0.3)
    if how == "raise":
        raise ValueError(f"deliberate failure in rank {rank}")
    if how == "abort":
        runtime.abort(5, "deliberate abort")
    if how == "exit":
        sys.exit(7)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "shm":
        with open(f"/dev/shm/ompy-{runtime.identity.jobid}-leftover", "wb") as f:
            f.write(b"x")
        os.kill(os.getpid(), signal.SIGKILL)
if os.environ.get("IGNORE_TERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


def wait_in_fence():
    runtime.modex.fence()
    time.sleep(120)


wait_in_fence()
