"""The launcher <-> daemon protocol: the launch record and the messages on the connection.

Framing is the control plane's (:mod:`ompy.orte.control.wire`): a 4-byte big-endian length and
one msgpack map; nothing is pickled.  The daemon's standard input carries one frame, the
:class:`LaunchInfo`; then the daemon connects to ``launcher`` and the handshake of
:mod:`ompy.orte.control.auth` runs with the launch secret, role ``daemon`` and the daemon's node
id (``challenge`` -> ``auth`` -> ``welcome``/``denied``).  After it:

==========  ====================  ===========================================================
direction   op                    fields
==========  ====================  ===========================================================
d -> l      hello                 node, host (its host name), pid, via (whom ssh came from)
l -> d      warm                  argv, env, cwd (what the node's ranks will run: the daemon
                                  starts its fork server now, while other nodes are served)
l -> d      launch                argv, env, cwd, ranks (every rank of the node at once: a
                                  list of maps rank, env (its variables beyond the common
                                  env), unset (common variables it lacks), stdin (bool))
l -> d      spawn                 rank, argv, env, cwd, stdin (bool: forward stdin to it)
d -> l      started               rank, pid
d -> l      failed                rank, message, code (the rank could not be started)
d -> l      output                rank, fd (1 or 2), data (bytes; empty: end of file)
d -> l      exited                rank, status (negative: killed by that signal)
d -> l      lost_child            node, message (a daemon this one started has gone)
l -> d      stdin                 rank, data (bytes; empty: end of file)
l -> d      signal                rank, signum (to the rank's process group)
l -> d      exit                  - (kill what is left, remove the session directory, exit)
==========  ====================  ===========================================================

A job's ranks are sent with one ``launch`` per daemon, so starting them costs one round trip
per node, not one per rank; ``spawn`` starts one rank (the ranks of ``MPI_Comm_spawn``).  The
daemon answers each rank of either with ``started`` or ``failed``, in the order sent.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from typing import Any

import attrs

ROLE_DAEMON = "daemon"

HELLO, SPAWN, STARTED, FAILED = "hello", "spawn", "started", "failed"
OUTPUT, EXITED, LOST_CHILD = "output", "exited", "lost_child"
STDIN, SIGNAL, EXIT = "stdin", "signal", "exit"
WARM, LAUNCH = "warm", "launch"


#: A silent peer is probed after this many seconds, then every ``KEEPALIVE_INTERVAL`` seconds,
#: and given up after ``KEEPALIVE_PROBES`` unanswered probes: a host that vanishes from the
#: network (no FIN, no RST) is noticed in about half a minute, not the kernel's two hours.
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_PROBES = 10, 5, 3


def keep_alive(sock: socket.socket) -> None:
    """Turn on TCP keep-alive probes with the timings above (Linux, as the daemon's pidfds)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, KEEPALIVE_IDLE)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, KEEPALIVE_INTERVAL)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, KEEPALIVE_PROBES)


class DaemonProtocolError(ValueError):
    """A message or a launch record that does not follow the protocol."""


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    )


def _is(kind: type) -> Callable[[Any], bool]:
    return lambda value: isinstance(value, kind)


def _launch_ranks(value: Any) -> bool:
    """A ``launch`` message's ``ranks``: one map per rank, each well formed."""
    return isinstance(value, list) and all(
        isinstance(item, dict)
        and set(item) == {"rank", "env", "unset", "stdin"}
        and _int(item["rank"])
        and _str_map(item["env"])
        and _str_list(item["unset"])
        and isinstance(item["stdin"], bool)
        for item in value
    )


_FIELDS: dict[str, dict[str, Callable[[Any], bool]]] = {
    HELLO: {"node": _int, "host": _is(str), "pid": _int, "via": _is(str)},
    WARM: {"argv": _str_list, "env": _str_map, "cwd": _is(str)},
    LAUNCH: {"argv": _str_list, "env": _str_map, "cwd": _is(str), "ranks": _launch_ranks},
    SPAWN: {"rank": _int, "argv": _str_list, "env": _str_map, "cwd": _is(str), "stdin": _is(bool)},
    STARTED: {"rank": _int, "pid": _int},
    FAILED: {"rank": _int, "message": _is(str), "code": _int},
    OUTPUT: {"rank": _int, "fd": lambda v: v in (1, 2), "data": _is(bytes)},
    EXITED: {"rank": _int, "status": _int},
    LOST_CHILD: {"node": _int, "message": _is(str)},
    STDIN: {"rank": _int, "data": _is(bytes)},
    SIGNAL: {"rank": _int, "signum": _int},
    EXIT: {},
}
#: What each side may receive.
FROM_DAEMON = frozenset({HELLO, STARTED, FAILED, OUTPUT, EXITED, LOST_CHILD})
FROM_LAUNCHER = frozenset({WARM, LAUNCH, SPAWN, STDIN, SIGNAL, EXIT})


def env_difference(common: Mapping[str, str], env: Mapping[str, str]) -> dict[str, Any]:
    """What a ``launch`` message says of one rank's ``env`` beyond the ``common`` one it
    carries once: the variables ``env`` adds or changes, and those it lacks."""
    return {
        "env": {name: value for name, value in env.items() if common.get(name) != value},
        "unset": [name for name in common if name not in env],
    }


def rank_env(common: Mapping[str, str], item: Mapping[str, Any]) -> dict[str, str]:
    """A rank's environment from a ``launch`` message: the inverse of :func:`env_difference`."""
    unset = set(item["unset"])
    env = {name: value for name, value in common.items() if name not in unset}
    env.update(item["env"])
    return env


def check(message: dict[str, Any], allowed: frozenset[str]) -> str:
    """The op of ``message`` after checking its fields; :class:`DaemonProtocolError` if bad."""
    op = message.get("op")
    if not isinstance(op, str) or op not in allowed:
        raise DaemonProtocolError(f"unexpected daemon message {op!r}")
    for name, valid in _FIELDS[op].items():
        if name not in message:
            raise DaemonProtocolError(f"daemon message '{op}' lacks the field '{name}'")
        if not valid(message[name]):
            raise DaemonProtocolError(f"daemon message '{op}' has a bad '{name}'")
    return op


@attrs.frozen
class NodeTree:
    """A node to start a daemon on, and the nodes whose daemons that daemon starts in turn."""

    node: int
    name: str
    children: tuple[NodeTree, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "name": self.name,
            "children": [c.to_wire() for c in self.children],
        }

    @classmethod
    def from_wire(cls, value: Any) -> NodeTree:
        if not (
            isinstance(value, dict)
            and _int(value.get("node"))
            and isinstance(value.get("name"), str)
            and isinstance(value.get("children"), list)
        ):
            raise DaemonProtocolError(f"a launch record's node is malformed: {value!r}")
        return cls(value["node"], value["name"], tuple(map(cls.from_wire, value["children"])))

    def count(self) -> int:
        """How many daemons this subtree holds (itself included)."""
        return 1 + sum(c.count() for c in self.children)


@attrs.frozen
class LaunchInfo:
    """What a daemon reads from its standard input before anything else."""

    #: The launch's id (the plm's own: the job id is made later and arrives with each rank).
    launch_id: str
    #: The launch secret: proves the daemon to the launcher (never on a command line).
    secret: bytes = attrs.field(repr=False)
    #: Where the launcher listens; host "" means "the address my ssh connection came from".
    launcher_host: str
    launcher_port: int
    #: This daemon's node and the daemons it starts itself.
    tree: NodeTree
    #: The remote shell command that starts children (e.g. ``["ssh", "-F", "cfg"]``).
    agent: tuple[str, ...]
    #: The interpreter that runs daemons on every node.
    python: str
    #: When set, the daemon takes its node id from this environment variable and its node
    #: name from its host name, instead of ``tree`` (which then has no children): one record
    #: for every daemon of a launch that cannot give each its own stdin (an ``srun`` step,
    #: ``SLURM_NODEID``).
    node_variable: str = ""

    def to_wire(self) -> dict[str, Any]:
        return {
            "launch_id": self.launch_id,
            "secret": self.secret,
            "launcher_host": self.launcher_host,
            "launcher_port": self.launcher_port,
            "tree": self.tree.to_wire(),
            "agent": list(self.agent),
            "python": self.python,
            "node_variable": self.node_variable,
        }

    @classmethod
    def from_wire(cls, value: dict[str, Any]) -> LaunchInfo:
        checks = {
            "launch_id": _is(str),
            "secret": lambda v: isinstance(v, bytes) and len(v) >= 16,
            "launcher_host": _is(str),
            "launcher_port": lambda v: _int(v) and 0 < v < 65536,
            "tree": _is(dict),
            "agent": _str_list,
            "python": _is(str),
        }
        for name, valid in checks.items():
            if name not in value or not valid(value[name]):
                raise DaemonProtocolError(f"the launch record has no valid '{name}'")
        return cls(
            value["launch_id"],
            value["secret"],
            value["launcher_host"],
            value["launcher_port"],
            NodeTree.from_wire(value["tree"]),
            tuple(value["agent"]),
            value["python"],
            str(value.get("node_variable", "")),
        )

    def for_child(self, child: NodeTree, launcher_host: str) -> LaunchInfo:
        """The record a daemon hands to a daemon it starts (the launcher address it used)."""
        return attrs.evolve(self, tree=child, launcher_host=launcher_host)
