"""A tour of the run-time: every rank publishes who it is, rank 0 prints the job as a table.

Run it under the launcher (``ompy run -n 4 python -m ompy.orte.demo``) or on its own
(``python -m ompy.orte.demo``, a singleton).  It exercises the whole control plane: identity
from ess, modex put/commit, a fence, and get of every rank's entry.
"""

from __future__ import annotations

import os
import socket

from ompy.orte.runtime import init

KEY = "ompy.orte.demo.identity"
COLUMNS = ("rank", "local_rank", "node", "host", "pid")


def format_table(rows: list[dict[str, object]]) -> str:
    """The rows as an aligned text table, one line per rank, with a header."""
    cells = [list(COLUMNS)] + [[str(row[column]) for column in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True))
        for line in cells
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def main() -> None:
    runtime = init()
    me = runtime.identity
    runtime.modex.put(
        KEY,
        {
            "rank": me.rank,
            "local_rank": me.local_rank,
            "node": me.node_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        },
    )
    runtime.modex.commit()
    runtime.modex.fence()
    if me.rank == 0:
        rows = [runtime.modex.get(rank, KEY) for rank in range(me.size)]
        kind = "singleton" if me.singleton else "launched"
        print(f"job {me.jobid}: {me.size} rank(s), {kind}")
        print(format_table(rows), flush=True)
    runtime.finalize()


if __name__ == "__main__":
    main()
