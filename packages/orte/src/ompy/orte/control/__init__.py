"""The control plane between the launcher and its ranks.

The launcher runs a :class:`ControlServer` (one thread, any number of ranks) and hands each
rank its identity through the environment (:func:`environment_for_rank`).  Each rank connects
with a :class:`ControlClient` (normally through :func:`ompy.orte.runtime.init`), proves it
knows the job secret, then uses the modex (``commit``/``fence``/``get``) and reports its
life-cycle (``finalize``, ``abort``, uncaught exceptions).  The server reports to the launcher
through :mod:`events <ompy.orte.control.events>`.

Wire format: 4-byte big-endian length + one msgpack map (:mod:`.wire`); never pickle.

Every rank imports this package on its way up but needs only the client side, so the server
and its events are imported on first use (``ompy.orte.control.ControlServer`` works as
before): that keeps attrs class building for the launcher's types out of every rank's start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .client import ControlClient, format_all_stacks
from .environment import (
    VARIABLES,
    LaunchEnvironmentError,
    environment_for_rank,
    environment_of,
    identity_from_environment,
    is_launched,
)
from .errors import (
    AuthenticationError,
    ConnectionLostError,
    ControlError,
    FenceError,
    ModexKeyError,
    RequestError,
)
from .store import ModexStore

if TYPE_CHECKING:
    from .events import (
        BadClient,
        Event,
        RankAborted,
        RankConnected,
        RankException,
        RankFinalized,
        RankLeaving,
        RankLost,
    )
    from .server import ControlServer

#: Launcher-side names, imported on first access (PEP 562).
_LAZY = {
    "ControlServer": ".server",
    "BadClient": ".events",
    "Event": ".events",
    "RankAborted": ".events",
    "RankConnected": ".events",
    "RankException": ".events",
    "RankFinalized": ".events",
    "RankLeaving": ".events",
    "RankLost": ".events",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "VARIABLES",
    "AuthenticationError",
    "BadClient",
    "ConnectionLostError",
    "ControlClient",
    "ControlError",
    "ControlServer",
    "Event",
    "FenceError",
    "LaunchEnvironmentError",
    "ModexKeyError",
    "ModexStore",
    "RankAborted",
    "RankConnected",
    "RankException",
    "RankFinalized",
    "RankLeaving",
    "RankLost",
    "RequestError",
    "environment_for_rank",
    "environment_of",
    "format_all_stacks",
    "identity_from_environment",
    "is_launched",
]
