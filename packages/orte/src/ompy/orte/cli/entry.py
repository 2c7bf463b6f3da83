"""The ``ompy`` executable: start a fork server on a guess, then run the command group.

Kept apart from :mod:`.main` so that nothing heavy is imported before the guess: the fork
server's imports then overlap the launcher's own (see
:mod:`ompy.orte.launcher.forkserver.early`).
"""

from __future__ import annotations

import sys
from typing import NoReturn


def console() -> NoReturn:
    """Entry point of the installed ``ompy`` script."""
    from ompy.orte.launcher.forkserver.early import start_early

    start_early(sys.argv[1:], fork=True)
    from .main import console as run_console

    run_console()
