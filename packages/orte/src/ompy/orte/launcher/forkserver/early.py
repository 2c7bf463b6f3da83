"""Starting the fork server at the launcher's first instruction, before its own imports.

The launcher needs about 200 ms (click, the MCA core, planning, framework selection) before
its plm component decides how to start ranks; the fork server needs about half a second to
import what the ranks need.  Both are mostly imports, so on a machine with two cores they can
run side by side: the ``ompy`` executable (:mod:`ompy.orte.cli.entry`)
calls :func:`start_early` first.  It reads ``ompy run``'s command line with a small scanner
(click is not imported yet) that knows the options from the table the click command is built
from (:mod:`ompy.orte.cli.run_options`), and, if the program qualifies, starts the server.

This is a guess made before anything is checked: the plm component later adopts the server
with :func:`take_early` only if it runs exactly the job's interpreter, options, program,
working directory and environment, and :func:`discard_early` ends it otherwise.  A wrong
guess costs the machine some CPU, never correctness.  Anything the scanner does not
understand means no guess.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ompy.orte.cli.run_options import BY_SPELLING, RUN_OPTIONS

from .client import ForkServerClient, environment_fits
from .pycommand import PythonCommand, classify

#: Short options that take a value, which may be attached (``-n2``, ``-xVAR``).
_ATTACHED = frozenset(
    name for option in RUN_OPTIONS if option.values == 1 for name in option.names if len(name) == 2
)
#: The plm parameter that turns the fork server off; an explicit "off" means no guess.
SWITCH = "plm_local_fork_server"
_OFF = frozenset({"0", "false", "no", "off"})

_early: ForkServerClient | None = None


class Guess:
    """What the scanner read: the program's argv, working directory and environment."""

    def __init__(self, argv: tuple[str, ...], cwd: Path, env: dict[str, str]) -> None:
        self.argv = argv
        self.cwd = cwd
        self.env = env


def scan_run(words: Sequence[str], environ: Mapping[str, str]) -> Guess | None:
    """Read ``ompy run WORDS``; ``None`` for anything that is not a plain, valid-looking run."""
    exports: list[str] = []
    wdir: str | None = None
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            index += 1
            break
        if not word.startswith("-") or word == "-":
            break
        name, equals, attached = word.partition("=")
        option = BY_SPELLING.get(word)
        if option is not None and option.values == 0:
            index += 1
            continue
        if option is not None and option.values == 2:
            if index + 2 >= len(words):
                return None
            parameter, value = words[index + 1], words[index + 2]
            if option.dest == "mca" and parameter == SWITCH and value.lower() in _OFF:
                return None
            index += 3
            continue
        if option is not None:
            if index + 1 >= len(words):
                return None
            value, index = words[index + 1], index + 2
        elif equals and name.startswith("--") and _takes_one_value(name):
            option, value, index = BY_SPELLING[name], attached, index + 1
        elif word[:2] in _ATTACHED and len(word) > 2:
            option, value, index = BY_SPELLING[word[:2]], word[2:], index + 1
        else:
            return None
        if option.dest == "exports":
            exports.append(value)
        elif option.dest == "wdir":
            wdir = value
    program = tuple(words[index:])
    if not program or str(environ.get(f"OMPY_MCA_{SWITCH}", "")).lower() in _OFF:
        return None
    env = {k: v for k, v in environ.items() if k != "OMPY_MCA_CLI_NAMES"}
    for item in exports:
        variable, sep, value = item.partition("=")
        if not sep:
            if variable not in environ:
                return None
            value = environ[variable]
        env[variable] = value
    cwd = Path(wdir).expanduser().resolve() if wdir is not None else Path.cwd()
    if not cwd.is_dir():
        return None
    from ompy.orte.launcher.errors import LaunchError
    from ompy.orte.launcher.program import resolve_program

    try:
        argv = resolve_program(program, cwd, env)
    except LaunchError:
        return None
    return Guess(argv, cwd, env)


def _takes_one_value(spelling: str) -> bool:
    option = BY_SPELLING.get(spelling)
    return option is not None and option.values == 1


def start_early(
    arguments: Sequence[str], environ: Mapping[str, str] | None = None, *, fork: bool = False
) -> None:
    """Start the fork server if ``ompy ARGUMENTS`` is a run of a qualifying Python program.

    ``fork`` (the ``ompy`` executable's first instruction, and nowhere else) lets the server
    be this process forked instead of a new interpreter, where that is sound (see
    :class:`ForkServerClient`).  Never raises: a failure here only means the launcher starts
    the server later, or not.
    """
    global _early
    if _early is not None or not arguments or arguments[0] != "run":
        return
    try:
        guess = scan_run(arguments[1:], os.environ if environ is None else environ)
        command = classify(guess.argv, guess.cwd) if guess is not None else None
        if guess is None or command is None:
            return
        from .deathsig import load_prctl

        _early = ForkServerClient(command, guess.env, guess.cwd, load_prctl(), fork=fork)
    except Exception:
        _early = None


def take_early(
    command: PythonCommand, env: Mapping[str, str], cwd: Path
) -> ForkServerClient | None:
    """The early server if it runs exactly this job (then it is the caller's); else ``None``.

    A server that does not fit is ended here.
    """
    global _early
    server, _early = _early, None
    if server is None:
        return None
    if server.command == command and server.cwd == cwd and environment_fits(server.env, env):
        return server
    server.close()
    return None


def discard_early() -> None:
    """End the early server unless a plm component took it (the job does not use it)."""
    global _early
    server, _early = _early, None
    if server is not None:
        server.close()
