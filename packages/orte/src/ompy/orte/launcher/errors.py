"""Errors the launcher reports to the user before or while starting a job."""

from __future__ import annotations


class LaunchError(Exception):
    """A job cannot be started as asked; the message says what was wrong and what to do.

    ``exit_code`` follows the shell's convention where one applies (127: program not found,
    126: program not executable) and is 1 for configuration mistakes.
    """

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code
