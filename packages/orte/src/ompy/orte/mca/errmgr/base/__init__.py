"""errmgr glue: select the error policy and describe exit statuses in words."""

from __future__ import annotations

import signal

from ompy.opal.mca import OpenFramework, open_and_select_one
from ompy.opal.mca.params import Registry

from .. import ErrmgrComponent, ErrmgrModule, framework


def select_errmgr(registry: Registry) -> tuple[OpenFramework[ErrmgrComponent], ErrmgrModule]:
    """Open the framework and pick the policy; the caller closes the framework at the end."""
    opened, _component, offer = open_and_select_one(framework, registry, None)
    return opened, offer.module


def exit_code_of(returncode: int) -> int:
    """The shell's code for an exit status: the code itself, or 128 + signal number."""
    return 128 - returncode if returncode < 0 else returncode


def describe_status(returncode: int) -> str:
    """'exited with code 3' or 'was killed by signal 9 (SIGKILL)'."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = "unknown signal"
    return f"was killed by signal {number} ({name})"
