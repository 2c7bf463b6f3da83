"""Run Python code as an MPI program: ``python -m ompy [options] <pyfile | -m mod | -c cmd | ->``.

This is mpi4py's ``mpi4py.run`` for ompy.  Why it exists: in an MPI job, one rank that dies of an
uncaught exception while the others wait in a collective would leave them waiting until the
launcher notices the exit.  Running the program through this module turns an uncaught exception
(or a ``SystemExit``/``KeyboardInterrupt`` with a failing status) into ``COMM_WORLD.Abort`` with
that status, after the traceback is printed, so the whole job ends at once with the cause shown.

The program is run by :mod:`runpy`, so ``__name__ == "__main__"`` holds in it and ``sys.argv``
is what the program expects (``sys.argv[0]`` is the script, the module's file, ``-c`` or ``-``).
"""

from __future__ import annotations

import ast
import os
import pathlib
import runpy
import sys
import textwrap
import types
from collections.abc import Sequence
from typing import Any, NoReturn

__all__ = ["main", "run_command_line", "set_abort_status"]


def _run_source(source: str, filename: str, argv0: str) -> None:
    """Run program text as ``__main__`` (what ``python -c``/``python -`` do)."""
    code = compile(source, filename, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    saved_main = sys.modules.get("__main__")
    sys.argv[0] = argv0
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
    finally:
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


def run_command_line(args: Sequence[str] | None = None) -> None:
    """Run ``[pyfile | -m mod | -c cmd | -] [arg] ...``, the part after the options.

    - ``pyfile``: a script file (its directory becomes ``sys.path[0]``, as for ``python pyfile``);
    - ``-m mod``: a module run as a script;
    - ``-c cmd``: program text given on the command line;
    - ``-``: program text read from standard input;
    - ``arg ...``: the program's ``sys.argv[1:]``.
    """
    sys.argv[:] = list(args) if args is not None else sys.argv[1:]
    if not sys.argv:
        raise ValueError("ompy.run: nothing to run (expected pyfile, -m mod, -c cmd or -)")
    first = sys.argv[0]
    if first == "-":
        _run_source(sys.stdin.read(), "<stdin>", "-")
    elif first == "-c":
        if len(sys.argv) < 2:
            raise ValueError("ompy.run: -c needs the program text")
        _run_source(sys.argv.pop(1), "<string>", "-c")
    elif first == "-m":
        if len(sys.argv) < 2:
            raise ValueError("ompy.run: -m needs a module name")
        del sys.argv[0]
        runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
    else:
        if not sys.flags.isolated:
            sys.path[0] = os.path.realpath(os.path.dirname(first))
        runpy.run_path(first, run_name="__main__")


def _exit_status(status: object) -> int:
    """The job's exit status for how the program ended (0: it did not fail)."""
    if isinstance(status, SystemExit):
        status = status.code
    elif isinstance(status, KeyboardInterrupt):
        import signal

        status = 128 + signal.SIGINT
    if isinstance(status, bool) or not isinstance(status, int):
        return 0 if status is None or status is False else 1
    return status


def set_abort_status(status: object) -> None:
    """End the whole MPI job with ``status`` (an int, or the exception the program ended with).

    Called from an ``except`` block: the traceback is printed first (through ``sys.excepthook``,
    which also tells ompy's exit hooks the process failed), then ``COMM_WORLD.Abort(status)``.
    Nothing is done when the status is 0 or MPI is not running (not imported, not initialized,
    or already finalized): the program then ends as Python would end it.
    """
    code = _exit_status(status)
    mpi: Any = sys.modules.get("ompy.MPI")
    if not code or mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return
    error = sys.exc_info()[1]
    if error is not None and not isinstance(error, SystemExit):
        sys.excepthook(type(error), error, error.__traceback__)
    elif isinstance(error, SystemExit) and not isinstance(error.code, int | None):
        print(error.code, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    mpi.COMM_WORLD.Abort(code)


# -- the command line ----------------------------------------------------------------------------


def _program() -> str:
    python = pathlib.Path(sys.executable).name
    return f"{python} -m {__spec__.parent if __spec__ else 'ompy'}"


def _usage(error: str | None = None) -> NoReturn:
    program = _program()
    lines = textwrap.dedent(f"""\
        usage: {program} [options] <pyfile> [arg] ...
           or: {program} [options] -m <mod> [arg] ...
           or: {program} [options] -c <cmd> [arg] ...
           or: {program} [options] - [arg] ...""")
    if error:
        print(f"{program}: {error}", file=sys.stderr)
        print(lines, file=sys.stderr)
        print(f"Try `{program} -h` for more information.", file=sys.stderr)
        sys.exit(1)
    print(lines)
    print(
        textwrap.dedent("""\
        options:
          --prefix             show install path and exit
          --version            show version number and exit
          --mpi-std-version    show MPI standard version and exit
          --mpi-lib-version    show MPI library version and exit
          -h|--help            show this help message and exit
          -rc <key=value,...>  set 'ompy.rc.key=value' (also --rc key=value,...)""")
    )
    sys.exit(0)


def _mpi_without_init() -> Any:
    """``ompy.MPI`` imported without initializing MPI (for the informational options)."""
    import ompy.rc

    ompy.rc.initialize = False
    ompy.rc.finalize = False
    from ompy import MPI

    return MPI


def _show(option: str) -> NoReturn:
    if option == "prefix":
        print(pathlib.Path(__file__).parent)
    elif option == "version":
        from ompy.ompi import __version__

        print(f"ompy {__version__}")
    elif option == "mpi-std-version":
        mpi = _mpi_without_init()
        version = f"{mpi.VERSION}.{mpi.SUBVERSION}"
        runtime = ".".join(map(str, mpi.Get_version()))
        note = f" (runtime: MPI {runtime})" if runtime != version else ""
        print(f"MPI {version}{note}")
    else:
        print(_mpi_without_init().Get_library_version())
    sys.exit(0)


def _parse_rc(text: str, options: dict[str, object]) -> None:
    for entry in text.split(","):
        key, _, value = entry.partition("=")
        if not key or not value:
            _usage(f"cannot parse rc option {entry!r} (expected key=value)")
        try:
            options[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[key] = value


_SHOW = {"prefix", "version", "mpi-std-version", "mpi-lib-version"}


def parse_command_line(args: Sequence[str]) -> tuple[dict[str, object], list[str]]:
    """Split ``args`` into rc options and the command to run; informational options exit."""
    rest = list(args)
    rc_options: dict[str, object] = {}
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c", "-"):
        option = rest.pop(0)
        name, has_value, value = option.lstrip("-").partition("=")
        if name in ("h", "help"):
            _usage()
        if name in _SHOW and not has_value:
            _show(name)
        if name != "rc":
            _usage(f"unknown option: {option}")
        if not has_value:
            if not rest or rest[0].startswith("-"):
                _usage(f"argument expected for option: {option}")
            value = rest.pop(0)
        _parse_rc(value, rc_options)
    if not rest:
        _usage("no path specified for execution")
    if rest[0] in ("-m", "-c") and len(rest) < 2:
        _usage(f"argument expected for option: {rest[0]}")
    return rc_options, rest


def main(args: Sequence[str] | None = None) -> None:
    """Entry point of ``python -m ompy`` and ``python -m ompy.run``."""
    rc_options, command = parse_command_line(sys.argv[1:] if args is None else args)
    if rc_options:
        import ompy.rc

        rc: Any = ompy.rc  # a module made callable (see ompy.rc)
        try:
            rc(**rc_options)
        except TypeError as error:
            _usage(str(error))
    try:
        run_command_line(command)
    except SystemExit as error:
        set_abort_status(error)
        raise
    except BaseException as error:
        set_abort_status(error)
        raise


if __name__ == "__main__":
    main()
