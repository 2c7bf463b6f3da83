"""What every side-by-side benchmark of this directory shares: which MPI to load, how to name
it in the output's metadata, the common options, and a timer of single calls.

The scripts are run as files (``ompy run -n 2 python packages/ompi/benchmarks/rma.py``), so
Python puts this directory first on ``sys.path`` and they import this module by name.  The two
libraries compared are named by their import package (``--mpi ompy`` or ``--mpi mpi4py``);
their versions come from the installed distributions' metadata, which both have (ompy's MPI
module lives in the ``ompy-ompi`` distribution; ``ompy`` itself is a namespace package without
a version attribute).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import platform
import time
from collections.abc import Callable
from typing import Any

#: The distribution that provides ``<package>.MPI``, for each library a benchmark can load.
DISTRIBUTIONS = {"ompy": "ompy-ompi", "mpi4py": "mpi4py"}


def load_mpi(package: str) -> Any:
    """``from package import MPI`` (``ompy`` or ``mpi4py``)."""
    if package not in DISTRIBUTIONS:
        raise SystemExit(f"unknown MPI package {package!r} (known: {', '.join(DISTRIBUTIONS)})")
    return importlib.import_module(f"{package}.MPI")


def library(mpi: Any, package: str) -> str:
    """The library's name and version and the MPI library's own first line, for the metadata."""
    version = importlib.metadata.version(DISTRIBUTIONS[package])
    # Open MPI's string ends in a NUL byte, which would make the output a binary file.
    first_line = mpi.Get_library_version().replace("\0", "").strip().splitlines()[0]
    return f"{package} {version}; {first_line}"


def parser(description: str, iters: int, warmup: int) -> argparse.ArgumentParser:
    """The options every benchmark takes: the library, the transport label, the iterations."""
    options = argparse.ArgumentParser(description=description)
    options.add_argument(
        "--mpi",
        default=os.environ.get("BENCH_MPI", "ompy"),
        choices=sorted(DISTRIBUTIONS),
        help="the package providing MPI (default: $BENCH_MPI or ompy)",
    )
    options.add_argument(
        "--label",
        default=os.environ.get("BENCH_LABEL", "sm"),
        help="the transport, a key column of the table (default: $BENCH_LABEL or sm)",
    )
    options.add_argument("--iters", type=int, default=iters, help="timed calls per case")
    options.add_argument("--warmup", type=int, default=warmup, help="untimed calls first")
    return options


def header(bench: str, mpi: Any, package: str, *lines: str) -> None:
    """Print the ``# key: value`` metadata that precedes a benchmark's CSV table."""
    import numpy as np

    print(f"# bench: {bench}")
    print(f"# impl: {library(mpi, package)}")
    print(f"# python: {platform.python_version()}; numpy {np.__version__}")
    print(f"# host cpus: {os.cpu_count()}; loadavg: {_loadavg()}")
    for line in lines:
        print(f"# {line}")


def timed(comm: Any, call: Callable[[], object], iters: int, warmup: int) -> list[float]:
    """Durations of ``iters`` calls after ``warmup`` untimed ones, each after a barrier."""
    times = []
    for i in range(warmup + iters):
        comm.Barrier()
        start = time.perf_counter()
        call()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return times


def _loadavg() -> str:
    try:
        return " ".join(f"{load:.2f}" for load in os.getloadavg())
    except OSError:
        return "unknown"
