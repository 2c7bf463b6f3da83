"""What :mod:`ompy.rc` asks for, read once when ``ompy.MPI`` is imported (as mpi4py does).

An environment variable ``OMPY_RC_<OPTION>`` overrides the program's setting, and the value
read is written back into ``ompy.rc`` so the program sees what is in force.  Variables are
read as mpi4py reads ``MPI4PY_RC_*``: digits as a number (for ``irecv_bufsz``), yes/no,
true/false, on/off and 1/0 as booleans, anything else as a lower-case word.  A value that is
not one of an option's choices draws a ``RuntimeWarning`` naming the option and the default
stays in force, as with mpi4py.

The resolved options are kept on the world model's state (``world_state().options``):
``Init_thread`` on import uses ``initialize``, ``threads`` and ``thread_level``, the exit hook
uses ``finalize``, and :func:`errors_policy` tells the error-handler code which handler
``COMM_WORLD`` and ``COMM_SELF`` start with.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import attrs

from ompy import rc

from ..constants import THREAD_FUNNELED, THREAD_MULTIPLE, THREAD_SERIALIZED, THREAD_SINGLE
from ..instance import world_state

THREAD_LEVELS = {
    "single": THREAD_SINGLE,
    "funneled": THREAD_FUNNELED,
    "serialized": THREAD_SERIALIZED,
    "multiple": THREAD_MULTIPLE,
}
#: The error policies ``rc.errors`` names.
ERROR_POLICIES = ("exception", "default", "abort", "fatal")

_POLICY_INDEX = {policy: index for index, policy in enumerate(ERROR_POLICIES)}
_TRUE = ("1", "yes", "true", "on", "y")
_FALSE = ("0", "no", "false", "off", "n")


@attrs.frozen
class RcOptions:
    """The options in force for this process's MPI (defaults: mpi4py's)."""

    initialize: bool = True
    threads: bool = True
    thread_level: int = THREAD_MULTIPLE
    finalize: bool = True
    fast_reduce: bool = True
    recv_mprobe: bool = True
    irecv_bufsz: int = 32768
    errors: str = "exception"


def resolve(environ: dict[str, str] | None = None) -> RcOptions:
    """The options ``ompy.rc`` and the environment ask for; bad values warn and keep defaults."""
    env = os.environ if environ is None else environ
    value = {name: _option(name, env) for name in rc.OPTIONS}
    initialize = _boolean("initialize", value["initialize"], True)
    finalize_asked = value["finalize"]
    return RcOptions(
        initialize=initialize,
        threads=_boolean("threads", value["threads"], True),
        thread_level=_choice("thread_level", value["thread_level"], THREAD_LEVELS, "multiple"),
        finalize=initialize
        if finalize_asked is None
        else _boolean("finalize", finalize_asked, initialize),
        fast_reduce=_boolean("fast_reduce", value["fast_reduce"], True),
        recv_mprobe=_boolean("recv_mprobe", value["recv_mprobe"], True),
        irecv_bufsz=_size("irecv_bufsz", value["irecv_bufsz"], 32768),
        errors=ERROR_POLICIES[_choice("errors", value["errors"], _POLICY_INDEX, "exception")],
    )


def errors_policy() -> str:
    """The error policy for ``COMM_WORLD``/``COMM_SELF`` (``rc.errors`` as read at import)."""
    options = world_state().options
    return options.errors if options is not None else resolve().errors


def _option(name: str, env: Any) -> Any:
    text = env.get(f"OMPY_RC_{name.upper()}")
    if text is None:
        return getattr(rc, name)
    word = text.strip().lower()
    if word.isdigit() and name == "irecv_bufsz":
        value: Any = int(word)
    elif word in _TRUE:
        value = True
    elif word in _FALSE:
        value = False
    else:
        value = word
    setattr(rc, name, value)
    return value


def _warn(name: str, value: Any) -> None:
    warnings.warn(f"ompy.rc.{name}: unexpected value {value!r}", RuntimeWarning, stacklevel=4)


def _boolean(name: str, value: Any, default: bool) -> bool:
    if value in (True, "yes"):
        return True
    if value in (False, "no"):
        return False
    _warn(name, value)
    return default


def _choice(name: str, value: Any, choices: dict[str, int], default: str) -> int:
    if isinstance(value, str) and value in choices:
        return choices[value]
    _warn(name, value)
    return choices[default]


def _size(name: str, value: Any, default: int) -> int:
    if type(value) is int and value >= 0:
        return value
    _warn(name, value)
    return default
