"""``python -m ompy.futures <pyfile | -m mod | -c cmd | -> [arg] ...``: run a program whose
``MPIPoolExecutor``\\ s use the other ranks of the job as workers, without spawning.

Run it under ``ompy run -n N``: rank 0 runs the program, ranks 1..N-1 serve its calls.  A
failure ends the whole job (as ``python -m ompy`` does).
"""

from __future__ import annotations

import os
import pathlib
import sys
import textwrap
from typing import NoReturn


def _usage(error: str | None = None) -> NoReturn:
    python = pathlib.Path(sys.executable).name
    text = textwrap.dedent(f"""\
        usage: {python} -m ompy.futures <pyfile> [arg] ...
           or: {python} -m ompy.futures -m <module> [arg] ...
           or: {python} -m ompy.futures -c <string> [arg] ...
           or: {python} -m ompy.futures - [arg] ...""")
    if error:
        print(f"{python} -m ompy.futures: {error}", file=sys.stderr)
        print(text, file=sys.stderr)
        raise SystemExit(1)
    print(text)
    raise SystemExit(0)


def check_command_line(args: list[str]) -> None:
    """Refuse a command line with nothing to run (before any rank starts serving)."""
    if not args:
        _usage("no path specified for execution")
    first = args[0]
    if first in ("-h", "--help"):
        _usage()
    if first in ("-m", "-c") and len(args) < 2:
        _usage(f"argument expected for option: {first}")
    if first.startswith("-") and first not in ("-m", "-c", "-"):
        _usage(f"unknown option: {first}")
    if not first.startswith("-") and not os.path.exists(first):
        _usage(f"path does not exist: {first}")


def main() -> None:
    args = sys.argv[1:]
    check_command_line(args)  # every rank checks, so a bad line ends every rank alike

    from ompy.run import run_command_line, set_abort_status

    from ._shared import run_shared

    sys.argv[:] = args  # the workers see the program's argv too, as rank 0 will
    try:
        run_shared(lambda: run_command_line(args))
    except BaseException as error:
        set_abort_status(error)
        raise


if __name__ == "__main__":
    main()
