"""One side-by-side table from benchmark runs of ompy and of a peer library (mpi4py).

    python sidebyside.py OUTDIR [--metrics bw_GBps,bw_best_GBps,lat_us]

``OUTDIR`` holds ``SIDE/NAME.runK.csv`` files (``SIDE`` is ``ompy`` or ``peer``), each the
output of a benchmark script of this directory: ``# key: value`` lines, then a CSV table with
an ``impl`` column.  Rows of the two sides are matched on their key columns (every column that
is neither ``impl``, ``iters`` nor a metric); a cell is the median over the runs, and the
ratio is ompy's over the peer's (for a bandwidth higher is better, for a latency lower).
"""

from __future__ import annotations

import argparse
import csv
import re
import statistics
from pathlib import Path

SIDES = ("peer", "ompy")
_RUN = re.compile(r"(?P<name>.+)\.run(?P<run>\d+)\.csv$")
#: Columns that are not part of a row's identity.
_NOT_KEYS = frozenset({"impl", "iters"})

Cell = dict[str, list[float]]


def read_rows(path: Path) -> list[dict[str, str]]:
    """The CSV rows of one benchmark output (its ``#`` lines skipped)."""
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(lines))


def collect(directory: Path, metrics: list[str]) -> dict[tuple[str, ...], Cell]:
    """Every run of one side: ``(benchmark, key columns...) -> {metric: [values]}``."""
    cells: dict[tuple[str, ...], Cell] = {}
    for path in sorted(directory.glob("*.csv")):
        match = _RUN.match(path.name)
        if match is None:
            continue
        for row in read_rows(path):
            key = (
                match["name"],
                *(
                    f"{c}={v}"
                    for c, v in row.items()
                    if c not in _NOT_KEYS and c not in metrics and not c.endswith(("_us", "_GBps"))
                ),
            )
            cell = cells.setdefault(key, {})
            for metric in metrics:
                if row.get(metric):
                    cell.setdefault(metric, []).append(float(row[metric]))
    return cells


def table(outdir: Path, metrics: list[str]) -> str:
    """The markdown table of both sides' medians and their ratio."""
    peer, ompy = (collect(outdir / side, metrics) for side in SIDES)
    lines = [
        f"| {' '.join(_key_columns(peer, ompy))} | metric | mpi4py + Open MPI | ompy | "
        "ompy/peer | runs |",
        "|---|---|---|---|---|---|",
    ]
    for key in sorted(set(peer) | set(ompy)):
        for metric in metrics:
            a, b = peer.get(key, {}).get(metric), ompy.get(key, {}).get(metric)
            if not a and not b:
                continue
            pa = statistics.median(a) if a else None
            pb = statistics.median(b) if b else None
            ratio = f"{pb / pa:.2f}" if pa and pb else "n/a"
            case = " ".join(item.partition("=")[2] for item in key[1:])
            lines.append(
                f"| {case} | {metric} | {_fmt(pa)} | {_fmt(pb)} | {ratio} | "
                f"{len(a or [])}/{len(b or [])} |"
            )
    return "\n".join(lines)


def _key_columns(*sides: dict[tuple[str, ...], Cell]) -> list[str]:
    """The names of the key columns (those of the first row found), for the header."""
    for side in sides:
        for key in side:
            return [item.partition("=")[0] for item in key[1:]]
    return ["case"]


def _fmt(value: float | None) -> str:
    return "missing" if value is None else f"{value:.4g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--metrics", default="bw_GBps,bw_best_GBps")
    args = parser.parse_args()
    print(table(args.outdir, args.metrics.split(",")))


if __name__ == "__main__":
    main()
