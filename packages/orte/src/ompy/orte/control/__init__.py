"""The control plane between the launcher and its ranks.

The launcher runs a :class:`ControlServer` (one thread, any number of ranks) and hands each
rank its identity through the environment (:func:`environment_for_rank`).  Each rank connects
with a :class:`ControlClient` (normally through :func:`ompy.orte.runtime.init`), proves it
knows the job secret, then uses the modex (``commit``/``fence``/``get``) and reports its
life-cycle (``finalize``, ``abort``, uncaught exceptions).  The server reports to the launcher
through :mod:`events <ompy.orte.control.events>`.

Wire format: 4-byte big-endian length + one msgpack map (:mod:`.wire`); never pickle.
"""

from __future__ import annotations

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
from .events import (
    BadClient,
    Event,
    RankAborted,
    RankConnected,
    RankException,
    RankFinalized,
    RankLost,
)
from .server import ControlServer
from .store import ModexStore

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
    "RankLost",
    "RequestError",
    "environment_for_rank",
    "environment_of",
    "format_all_stacks",
    "identity_from_environment",
    "is_launched",
]
