"""Reports, as one JSON line, what the interpreter set up for this rank's program.

Run as a script, as ``-m pyforms`` (from this directory) or through ``-c`` (the code execs this
file's text, so ``__file__`` is absent as it is for ``-c``).  Rank 0 also reads its stdin.
"""

import json
import os
import random
import sys


def _parent_is_fork_server():
    with open(f"/proc/{os.getppid()}/comm") as comm:  # the name the fork server gives itself
        return comm.read().strip() == "ompy-forksrv"


report = {
    "argv": sys.argv,
    "orig_argv_tail": sys.orig_argv[1:],
    "path0": sys.path[0],
    "name": __name__,
    "file": globals().get("__file__"),
    "main_is_this_module": sys.modules["__main__"].__dict__ is globals(),
    "cwd": os.getcwd(),
    "env": {k: v for k, v in os.environ.items() if k.startswith(("OMPY_", "EXPORTED_"))},
    "stdin": sys.stdin.read() if os.environ["OMPY_RANK"] == "0" else None,
    "stdout_line_buffering": sys.stdout.line_buffering,
    "stdout_write_through": sys.stdout.write_through,
    "stderr_line_buffering": sys.stderr.line_buffering,
    "flags_optimize": sys.flags.optimize,
    "random": random.random(),
    "session": os.getsid(0) == os.getpid(),
    "forked_by": "fork server" if _parent_is_fork_server() else "launcher",
    "open_fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
}
for secret in ("OMPY_SECRET", "OMPY_SERVER", "OMPY_JOBID", "OMPY_SESSION_DIR"):
    report["env"][secret] = bool(report["env"].get(secret))  # differ between jobs
if __name__ == "__main__":
    print(json.dumps(report, sort_keys=True))
