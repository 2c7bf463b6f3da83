"""Start-up benchmark of ``ompy run``: wall time from launch until every rank fenced and exited.

Each rank runs ``python -m ompy.orte.demo`` (identity, modex put/commit, one fence, finalize),
so the time covers the launcher's start-up, spawning, every rank's interpreter and ompy
imports, the fence and the teardown.  Prints numbers; not a test.

    python packages/orte/benchmarks/startup.py [--repeat 5] [--sizes 2,8]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

OMPY = str(Path(sys.executable).with_name("ompy"))


def time_job(size: int) -> float:
    started = time.perf_counter()
    subprocess.run(
        [OMPY, "run", "-n", str(size), "--oversubscribe", "python", "-m", "ompy.orte.demo"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--sizes", default="2,8")
    args = parser.parse_args()
    print(f"{'ranks':>5}  {'min s':>7}  {'median s':>8}  {'max s':>7}")
    for size in (int(item) for item in args.sizes.split(",")):
        times = [time_job(size) for _ in range(args.repeat)]
        print(f"{size:>5}  {min(times):7.3f}  {statistics.median(times):8.3f}  {max(times):7.3f}")


if __name__ == "__main__":
    main()
