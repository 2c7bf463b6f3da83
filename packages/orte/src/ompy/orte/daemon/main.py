"""``ompy daemon``: the per-node daemon's command (``python -m ompy.orte.daemon`` skips click).

Started by a launcher, never by hand: it reads its launch record from standard input.
"""

from __future__ import annotations

import sys

import click

from .launch import main, read_launch_info

__all__ = ["daemon", "main", "read_launch_info"]


@click.command(name="daemon", context_settings={"help_option_names": ["-h", "--help"]})
def daemon() -> None:
    """The per-node daemon of multi-node jobs (started by ompy run, reads stdin)."""
    sys.exit(main())
