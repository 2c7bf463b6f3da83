"""Turning the command line's program into what each rank executes.

* ``app.py`` (an existing file ending in ``.py``) runs under the interpreter that runs
  ``ompy run`` (``sys.executable``), so ranks import the same ompy installation.
* A bare ``python``, ``python3`` or ``python3.X`` also means ``sys.executable``: inside a
  virtual environment that was not activated, the ``python`` found on ``PATH`` would be another
  interpreter without ompy, which is never what the user meant.
* Anything else is executed as given: names without a slash are looked up on ``PATH`` (the
  ``PATH`` the ranks will see), paths must exist and be executable.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import LaunchError

_PYTHON_NAME = re.compile(r"python(3(\.\d+)?)?")


def resolve_program(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """The argv each rank executes; raises :class:`LaunchError` when the program cannot run."""
    if not argv:
        raise LaunchError("no program given: write e.g. 'ompy run -n 4 python app.py'", 2)
    program, args = argv[0], tuple(argv[1:])
    if _PYTHON_NAME.fullmatch(program):
        return (sys.executable, *args)
    path = Path(program) if os.path.isabs(program) else cwd / program
    if program.endswith(".py") and path.is_file():
        return (sys.executable, str(path), *args)
    if "/" in program:
        if not path.exists():
            raise LaunchError(f"the program '{program}' does not exist (looked in {cwd})", 127)
        if path.is_dir() or not os.access(path, os.X_OK):
            raise LaunchError(
                f"the program '{program}' is not executable; run 'chmod +x {program}' or "
                f"name its interpreter, e.g. 'ompy run -n 2 python {program}'",
                126,
            )
        return (str(path), *args)
    search = (env or os.environ).get("PATH", os.defpath)
    found = shutil.which(program, path=search)
    if found is None:
        raise LaunchError(
            f"the program '{program}' was not found on PATH; give its path, or for a Python "
            f"script without the .py suffix write 'ompy run ... python {program}'",
            127,
        )
    return (found, *args)
