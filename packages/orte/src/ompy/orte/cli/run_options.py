"""The options of ``ompy run``, declared once: their names and how many values each takes.

Two readers, so one table: the click command (:mod:`.run`) builds every option from it, and
the fork server's early scanner (:mod:`ompy.orte.launcher.forkserver.early`) reads it at the
``ompy`` executable's first instruction, before click is imported (click's import alone would
eat a tenth of the head start the early server exists for).  Types, defaults and help stay
with the click command: the scanner needs only the spellings and the arity.

This module imports nothing.
"""

from __future__ import annotations


class RunOption:
    """One option of ``ompy run`` (a plain class: :mod:`typing` would cost the early path 3 ms)."""

    __slots__ = ("dest", "names", "negations", "values")

    def __init__(
        self, dest: str, names: tuple[str, ...], values: int, negations: tuple[str, ...] = ()
    ) -> None:
        #: The field of :class:`~ompy.orte.launcher.plan.RunOptions` it fills.
        self.dest = dest
        #: Every spelling (``-n``, ``-np``, ``--np``).
        self.names = names
        #: 0 for a flag, 1 for an option with one value, 2 for a pair (``--mca NAME VALUE``).
        self.values = values
        #: For an on/off flag: the spellings that turn it off, one per name.
        self.negations = negations

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every word that selects this option on a command line."""
        return (*self.names, *self.negations)

    def __repr__(self) -> str:
        return f"RunOption({self.dest!r}, {self.names!r}, {self.values}, {self.negations!r})"


RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption("np", ("-n", "-np", "--np"), 1),
    RunOption("hosts", ("--host",), 1),
    RunOption("hostfile", ("--hostfile",), 1),
    RunOption("map_by", ("--map-by",), 1),
    RunOption("bind_to", ("--bind-to",), 1),
    RunOption("oversubscribe", ("--oversubscribe",), 0, ("--no-oversubscribe",)),
    RunOption("mca", ("--mca",), 2),
    RunOption("exports", ("-x",), 1),
    RunOption("tag_output", ("--tag-output",), 0),
    RunOption("timestamp_output", ("--timestamp-output",), 0),
    RunOption("output_dir", ("--output-filename",), 1),
    RunOption("wdir", ("--wdir",), 1),
    RunOption("timeout", ("--timeout",), 1),
    RunOption("quiet", ("-q", "--quiet"), 0),
    RunOption("verbose", ("--verbose",), 0),
)

#: The options by :attr:`RunOption.dest`.
BY_DEST: dict[str, RunOption] = {option.dest: option for option in RUN_OPTIONS}
#: The options by every spelling.
BY_SPELLING: dict[str, RunOption] = {
    spelling: option for option in RUN_OPTIONS for spelling in option.spellings
}
