"""What the launcher itself says on stderr: warnings, verbose notes, the end-of-job report.

Every line starts with ``ompy run:`` so it stands out from the ranks' forwarded output.
``--quiet`` drops warnings and notes but never the report of a failed job: that one explains
the exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import attrs

NO_STACK = "no stack available (not an ompy program, or it did not answer in time)"


@attrs.define
class Reporter:
    """Writes the launcher's messages to ``stream`` (stderr by default)."""

    quiet: bool = False
    verbose: bool = False
    stream: object = None

    def _write(self, text: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        try:
            stream.write(text if text.endswith("\n") else text + "\n")
            stream.flush()
        except (BrokenPipeError, ValueError):
            pass  # nobody is listening any more; the exit code still tells the story

    def warn(self, message: str) -> None:
        if not self.quiet:
            self._write(f"ompy run: warning: {message}")

    def note(self, message: str) -> None:
        """A diagnostic shown with ``--verbose`` only."""
        if self.verbose:
            self._write(f"ompy run: {message}")

    def error(self, message: str, detail: str = "", detail_tag: str = "") -> None:
        """A paragraph that is always shown, optionally followed by tagged detail lines."""
        text = f"ompy run: {message}"
        if detail:
            lines = detail.rstrip("\n").splitlines()
            text += "\n" + "\n".join(f"{detail_tag}{line}" for line in lines)
        self._write(text)

    def stacks(self, header: str, running: Mapping[int, int], stacks: Mapping[int, str]) -> None:
        """The Python stacks of the ``running`` ranks (rank -> pid); always shown."""
        parts = [f"ompy run: {header}"]
        for rank, pid in sorted(running.items()):
            stack = stacks.get(rank, "").rstrip("\n") or NO_STACK
            parts.append(f"--- rank {rank} (pid {pid}) ---\n{stack}")
        self._write("\n".join(parts))
