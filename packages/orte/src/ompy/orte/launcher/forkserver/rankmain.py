"""Running a :class:`~.pycommand.PythonCommand` in a forked process as ``python`` would run it.

The fork server's child calls :func:`run_as_main`, which never returns.  It reproduces what the
interpreter does for ``-c``, ``-m`` and a script: ``sys.argv``, ``sys.path[0]``, a fresh
``__main__`` module, the exit status of ``SystemExit``, an uncaught exception printed by
``sys.excepthook`` (so ompy's hook reports it to the launcher) with exit status 1, and death by
SIGINT after an uncaught ``KeyboardInterrupt``.
"""

from __future__ import annotations

import atexit
import builtins
import importlib.machinery
import io
import os
import runpy
import shlex
import signal
import sys
import threading
import types
from typing import NoReturn

from ompy.opal import proctitle
from ompy.orte.control.environment import RANK

from .pycommand import PythonCommand

#: Python's exit status when flushing standard output fails at exit.
FLUSH_FAILED = 120


def run_as_main(command: PythonCommand) -> NoReturn:
    """Run the program, then end the process the way the interpreter would, minus teardown.

    The process ends with ``os._exit`` once everything a program can observe of a normal
    interpreter exit has happened: non-daemon threads joined, ``atexit`` handlers run (ompy
    finalizes MPI there), ``sys.stdout`` and ``sys.stderr`` flushed.  What is skipped is the
    interpreter's teardown (freeing every module and object one by one), which takes 100-150 ms
    in a rank that imported numpy and ompy and changes nothing outside the process; Python does
    not promise to run finalizers of objects still alive at exit anyway.
    """
    sys.argv = command.sys_argv()
    sys.orig_argv = [command.executable, *command.options, *_program_words(command)]
    # Until the run-time names it fully, a rank at least stops looking like its fork server.
    rank = os.environ.get(RANK, "?")
    proctitle.set_title(f"ompy rank {rank}: {shlex.join(sys.orig_argv)}", name=f"ompy-rank{rank}")
    if not sys.flags.safe_path:
        sys.path.insert(0, _path0(command))
    code, interrupted = _execute(command)
    code, interrupted = _shut_down(code, interrupted)
    if interrupted:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _program_words(command: PythonCommand) -> list[str]:
    if command.kind == "script":
        return [command.target, *command.args]
    return ["-c" if command.kind == "code" else "-m", command.target, *command.args]


def _path0(command: PythonCommand) -> str:
    """The first entry of ``sys.path`` that the interpreter computes for this form."""
    if command.kind == "code":
        return ""
    if command.kind == "module":
        return os.getcwd()
    return os.path.dirname(os.path.realpath(command.target))


def _fresh_main(**attributes: object) -> types.ModuleType:
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __spec__=None, __package__=None, **attributes)
    sys.modules["__main__"] = main
    return main


def _execute(command: PythonCommand) -> tuple[int, bool]:
    """Run the program; return its exit status and whether it ended by KeyboardInterrupt."""
    try:
        if command.kind == "code":
            main = _fresh_main(__loader__=importlib.machinery.BuiltinImporter)
            exec(compile(command.target, "<string>", "exec", dont_inherit=True), main.__dict__)
        elif command.kind == "module":
            runpy._run_module_as_main(command.target, alter_argv=True)  # what -m calls
        else:
            path = os.path.abspath(command.target)
            try:
                with io.open_code(path) as stream:
                    source = stream.read()
            except OSError as error:
                print(
                    f"{command.executable}: can't open file {path!r}: "
                    f"[Errno {error.errno}] {error.strerror}",
                    file=sys.stderr,
                )
                return 2, False
            loader = importlib.machinery.SourceFileLoader("__main__", path)
            main = _fresh_main(__file__=path, __cached__=None, __loader__=loader)
            exec(compile(source, path, "exec", dont_inherit=True), main.__dict__)
    except SystemExit as stop:
        status = exit_status(stop)
        _note_exit(status, stop)
        return status, False
    except BaseException as error:
        # This frame is not the program's: leave it out of the traceback, as python does.
        traceback = error.__traceback__.tb_next if error.__traceback__ else None
        error.__traceback__ = traceback
        sys.excepthook(type(error), error, traceback)
        return 1, isinstance(error, KeyboardInterrupt)
    return 0, False


def exit_status(stop: SystemExit) -> int:
    """The process exit status for ``SystemExit(code)``, as the interpreter computes it."""
    code = stop.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _note_exit(status: int, stop: SystemExit) -> None:
    """Tell ompy's run-time, if the program started it, that the program called ``sys.exit``.

    Before the exit handlers run: MPI's finalize at exit needs to know (see
    :func:`ompy.orte.runtime.note_exit`).
    """
    runtime = sys.modules.get("ompy.orte.runtime")
    if runtime is None:
        return
    code = stop.code
    shown = "" if code is None else repr(code) if len(repr(code)) <= 40 else repr(code)[:37] + "..."
    runtime.note_exit(status, f"called sys.exit({shown})")


def _shut_down(code: int, interrupted: bool) -> tuple[int, bool]:
    """What the interpreter does at exit before its teardown: threads, atexit, flushing."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls
    except KeyboardInterrupt:
        interrupted = True
    atexit._run_exitfuncs()
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except Exception:
        print("Exception ignored on flushing sys.stdout", file=sys.stderr)
        if code == 0:
            code = FLUSH_FAILED
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except Exception:
        pass
    return code, interrupted
