"""Which rank command lines the fork server can run: this interpreter in one of its plain forms.

A forked rank must behave as ``python ...`` would, so only command lines whose meaning is fully
understood qualify; anything else (another interpreter, ``-i``, ``-`` for stdin, a directory or
zip archive as the script, an unknown flag) is started with fork/exec as before.

Qualifying forms, after zero or more harmless interpreter options::

    PYTHON -c CODE [ARGS...]
    PYTHON -m MODULE [ARGS...]
    PYTHON SCRIPT [ARGS...]         (SCRIPT a regular file that is Python source)

The fork server itself is started with the same interpreter options, so whatever they change
(``sys.flags``, warning filters, unbuffered streams) is the same in the forked rank as in an
executed one; only options that act at start-up alone, and identically in every process, are
accepted.
"""

from __future__ import annotations

import os
import sys
from collections import namedtuple
from collections.abc import Sequence
from pathlib import Path

#: Single-letter options without an argument that may be combined (``-uB``).
_PLAIN_OPTIONS = frozenset("bBdEIOPqsu")
#: ``-X`` options that only set a flag at start-up.
_X_OPTIONS = frozenset(
    {"dev", "utf8", "utf8=0", "utf8=1", "warn_default_encoding", "faulthandler", "no_debug_ranges"}
)


class PythonCommand(
    namedtuple("PythonCommand", ["executable", "options", "kind", "target", "args"])
):
    """A rank command line that runs this interpreter on code, a module or a script.

    * ``executable``: the interpreter, as given;
    * ``options``: interpreter options before the program, as given (the fork server starts
      with them);
    * ``kind``: ``"code"`` (``-c``), ``"module"`` (``-m``) or ``"script"``;
    * ``target``: the code, the module name or the script path as given;
    * ``args``: the program's arguments.

    A named tuple rather than an attrs class: the ``ompy`` executable imports this module
    before anything else (see :mod:`.early`), and importing attrs would delay the fork
    server's start by tens of milliseconds.
    """

    __slots__ = ()

    def sys_argv(self) -> list[str]:
        """``sys.argv`` as the interpreter sets it before running the program.

        For ``-m`` runpy then replaces ``argv[0]`` with the module's file, as ``python -m`` does.
        """
        first = {"code": "-c", "module": "-m", "script": self.target}[self.kind]
        return [first, *self.args]


def is_this_interpreter(program: str) -> bool:
    """Whether ``program`` starts the interpreter that runs the launcher, with the same packages.

    The same path qualifies.  A different path to the same binary does only outside a virtual
    environment: inside one, the base interpreter's binary has not got the environment's
    packages even though it is the same file.
    """
    if os.path.abspath(program) == os.path.abspath(sys.executable):
        return True
    if sys.prefix != sys.base_prefix:
        return False
    try:
        return os.path.samefile(program, sys.executable)
    except OSError:
        return False


def is_python_source(path: Path) -> bool:
    """A regular, readable file that ``python PATH`` would compile (not a zip or a ``.pyc``)."""
    if path.suffix == ".pyc":
        return False
    try:
        if not path.is_file():
            return False
        with path.open("rb") as source:
            return source.read(2) != b"PK"  # a zip archive runs its __main__.py
    except OSError:
        return False


def classify(argv: Sequence[str], cwd: Path) -> PythonCommand | None:
    """The :class:`PythonCommand` for ``argv`` (as resolved for the ranks), or ``None``."""
    if not argv or not is_this_interpreter(argv[0]):
        return None
    options: list[str] = []
    index = 1
    while index < len(argv):
        word = argv[index]
        if word in ("-c", "-m"):
            if index + 1 >= len(argv):
                return None
            kind = "code" if word == "-c" else "module"
            target = argv[index + 1]
            if kind == "module" and not target:
                return None
            return PythonCommand(argv[0], tuple(options), kind, target, tuple(argv[index + 2 :]))
        if word.startswith(("-c", "-m")) and len(word) > 2:
            kind = "code" if word[1] == "c" else "module"
            return PythonCommand(argv[0], tuple(options), kind, word[2:], tuple(argv[index + 1 :]))
        if word in ("-W", "-X"):
            if index + 1 >= len(argv) or not _option_value_ok(word, argv[index + 1]):
                return None
            options.extend((word, argv[index + 1]))
            index += 2
            continue
        if word.startswith(("-W", "-X")) and len(word) > 2:
            if not _option_value_ok(word[:2], word[2:]):
                return None
            options.append(word)
            index += 1
            continue
        if word.startswith("-"):
            letters = word[1:]
            if not letters or not set(letters) <= _PLAIN_OPTIONS:
                return None  # '-', '--', -i, -h, -V, -x, --help, unknown: the interpreter decides
            options.append(word)
            index += 1
            continue
        path = Path(word) if os.path.isabs(word) else cwd / word
        if not is_python_source(path):
            return None
        return PythonCommand(argv[0], tuple(options), "script", word, tuple(argv[index + 1 :]))
    return None  # no program: an interactive interpreter


def _option_value_ok(option: str, value: str) -> bool:
    if option == "-X":
        return value in _X_OPTIONS
    return bool(value)  # -W: a warning filter, applied at start-up in every process alike
