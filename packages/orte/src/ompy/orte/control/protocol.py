"""The control protocol's messages: names, fields and their checks, shared by both ends.

Every message is a msgpack map with an ``op``.  After the handshake (``challenge`` ->
``auth`` -> ``welcome`` or ``denied``) the client sends requests carrying an ``id``; the server
answers each with ``reply`` (``ok`` plus ``value``, or ``error``) and may push ``stacks``
(answered with ``stacks_reply``) or ``terminate`` at any time.

=============  ============================  =============================================
request        fields                        reply value
=============  ============================  =============================================
hello          rank, pid, host               None (the rank is now connected)
commit         data (map of str -> value)    None
fence          generation                    the generation that completed
get            rank, key                     the value, or error ModexKeyError
abort          code, message                 None (the launcher will end the job)
finalizing     -                             None (the rank entered MPI Finalize)
leaving        code (int or nil), how        true: finalize with the others (every other rank
                                             reached Finalize); false: the launcher ends the
                                             job, exit now (the rank is leaving early)
finalize       -                             None (the rank finished cleanly)
exception      traceback                     None
open_port      -                             a new port name (``Open_port``)
close_port     port                          None (``PortError`` if it is not open)
meet           key, side, value              the other side's value, once it came (see
                                             :meth:`.universe.Universe.meet`)
publish        service, port                 None (``ServiceError`` if taken)
unpublish      service, port                 None (``ServiceError`` if not published so)
lookup         service                       the port (``NameLookupError`` if unknown)
spawn          apps (list of maps: argv,     None once started (``SpawnError`` if it cannot
               maxprocs, env, wdir, host),   be); the children connect to ``port``
               port
=============  ============================  =============================================

``get`` names a *universe rank* (:mod:`.universe`): the job's own world rank plus its base,
which is the world rank itself for the launcher's first job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import DPM_ERRORS, ControlError, FenceError, ModexKeyError, RequestError

# handshake
CHALLENGE, AUTH, WELCOME, DENIED = "challenge", "auth", "welcome", "denied"
# requests
HELLO, COMMIT, FENCE, GET = "hello", "commit", "fence", "get"
ABORT, FINALIZE, EXCEPTION = "abort", "finalize", "exception"
FINALIZING, LEAVING = "finalizing", "leaving"
# server -> client
REPLY, STACKS, TERMINATE = "reply", "stacks", "terminate"
# client -> server, answering a push
STACKS_REPLY = "stacks_reply"
# between the server and a node daemon carrying its ranks' connections (see server.py)
ATTACH, DETACH, RELAY = "attach", "detach", "relay"
FENCE_NODE, FENCED = "fence_node", "fenced"
# dynamic processes (served with the other jobs of the launcher: see universe.py)
OPEN_PORT, CLOSE_PORT, MEET = "open_port", "close_port", "meet"
PUBLISH, UNPUBLISH, LOOKUP, SPAWN = "publish", "unpublish", "lookup", "spawn"


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is(kind: type) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, kind)


_CHECKS: dict[str, dict[str, Callable[[Any], bool]]] = {
    AUTH: {"role": _is(str), "rank": _int, "jobid": _is(str), "proof": _is(bytes)},
    HELLO: {"id": _int, "rank": _int, "pid": _int, "host": _is(str)},
    COMMIT: {"id": _int, "data": _is(dict)},
    FENCE: {"id": _int, "generation": _int},
    GET: {"id": _int, "rank": _int, "key": _is(str)},
    ABORT: {"id": _int, "code": _int, "message": _is(str)},
    FINALIZE: {"id": _int},
    FINALIZING: {"id": _int},
    LEAVING: {"id": _int, "code": lambda value: value is None or _int(value), "how": _is(str)},
    EXCEPTION: {"id": _int, "traceback": _is(str), "consequential": _is(bool)},
    STACKS_REPLY: {"ref": _int, "text": _is(str)},
    OPEN_PORT: {"id": _int},
    CLOSE_PORT: {"id": _int, "port": _is(str)},
    MEET: {"id": _int, "key": _is(str), "side": _is(str), "value": lambda value: True},
    PUBLISH: {"id": _int, "service": _is(str), "port": _is(str)},
    UNPUBLISH: {"id": _int, "service": _is(str), "port": _is(str)},
    LOOKUP: {"id": _int, "service": _is(str)},
    SPAWN: {"id": _int, "apps": _is(list), "port": _is(str)},
}

REQUESTS = frozenset(
    {HELLO, COMMIT, FENCE, GET, ABORT, FINALIZE, FINALIZING, LEAVING, EXCEPTION}
    | {OPEN_PORT, CLOSE_PORT, MEET, PUBLISH, UNPUBLISH, LOOKUP, SPAWN}
)


def check_client_message(message: dict[str, Any]) -> str:
    """The op of a message from a client, after checking its fields; ``RequestError`` if bad."""
    op = message.get("op")
    checks = _CHECKS.get(op) if isinstance(op, str) else None
    if checks is None:
        raise RequestError(f"unknown control request {op!r}")
    for field, check in checks.items():
        if field not in message:
            raise RequestError(f"control request '{op}' lacks the field '{field}'")
        value = message[field]
        if not check(value):
            raise RequestError(f"control request '{op}' has a bad '{field}': {value!r}")
    return op


def error_payload(error: ControlError) -> dict[str, Any]:
    """How a refused request travels back to the client."""
    payload: dict[str, Any] = {"kind": type(error).__name__, "message": str(error)}
    if isinstance(error, ModexKeyError):
        payload.update(rank=error.rank, key=error.key)
    return payload


def error_from_payload(payload: Any) -> ControlError:
    """The exception a client raises for a refused request."""
    if not isinstance(payload, dict):
        return RequestError(f"the control server refused the request: {payload!r}")
    kind, message = payload.get("kind"), str(payload.get("message", "no reason given"))
    rank, key = payload.get("rank"), payload.get("key")
    if kind == "ModexKeyError" and _int(rank) and isinstance(key, str):
        return ModexKeyError(rank, key)
    if kind == "FenceError":
        return FenceError(message)
    if isinstance(kind, str) and kind in DPM_ERRORS:
        return DPM_ERRORS[kind](message)
    return RequestError(message)
