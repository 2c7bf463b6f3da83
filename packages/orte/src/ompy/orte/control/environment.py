"""The environment contract between the launcher and its ranks, in both directions.

The launcher builds each rank's variables with :func:`environment_for_rank`; the rank reads
them back with :func:`identity_from_environment` (through the ``ess/env`` component).  Both
directions live here so the names and formats cannot drift apart.

=======================  ===============================================================
variable                 value
=======================  ===============================================================
OMPY_JOBID               the job's token, e.g. ``j3f9a1c``
OMPY_RANK, OMPY_SIZE     this rank and the number of ranks in the job
OMPY_LOCAL_RANK          this rank's index among the ranks of its node
OMPY_LOCAL_SIZE          the number of ranks on this node
OMPY_NODE_ID             the node's index in the allocation
OMPY_NODE_NAME           the node's host name
OMPY_SERVER              ``host:port`` of the launcher's control server
OMPY_SECRET              the 32-byte job secret, in hex
OMPY_OVERSUBSCRIBED      ``1`` if the node has more ranks than cores, else ``0``
OMPY_SESSION_DIR         a per-job directory that the launcher removes at the end
OMPY_NODE_NAMES          (optional) every node's name, by node id, comma-separated
OMPY_RANK_NODES          (optional, with OMPY_NODE_NAMES) every rank's node id in rank
                         order, run-length encoded: ``0*4,1*4`` is four ranks on node 0
                         and four on node 1
OMPY_UNIVERSE_SIZE       (optional) how many processes the allocation has room for: the
                         slots of ``--host``/the hostfile/the resource manager, at least the
                         job's size (``MPI.UNIVERSE_SIZE``; absent: the job's size)
OMPY_UNIVERSE_BASE       (optional) the job's first universe rank, by which processes of
                         the launcher's other jobs name its ranks (absent: 0, the first job)
OMPY_PARENT_PORT         (optional) a spawned job's port: its MPI initialization connects
                         to the spawning processes there (``Comm.Get_parent``)
OMPY_BINDING             the launcher's binding policy (``orte_bind_to``), the same for
                         every rank: read by the node's rank starter, which binds the rank
                         before it runs (:mod:`ompy.orte.launcher.binding`)
=======================  ===============================================================

The two optional job-map variables carry the job map, so that MPI initialization knows where every
rank runs without a modex exchange; a rank without them learns it from the modex.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ompy.orte.mca.ess import SECRET_SIZE, Identity

JOBID = "OMPY_JOBID"
RANK = "OMPY_RANK"
SIZE = "OMPY_SIZE"
LOCAL_RANK = "OMPY_LOCAL_RANK"
LOCAL_SIZE = "OMPY_LOCAL_SIZE"
NODE_ID = "OMPY_NODE_ID"
NODE_NAME = "OMPY_NODE_NAME"
SERVER = "OMPY_SERVER"
SECRET = "OMPY_SECRET"
OVERSUBSCRIBED = "OMPY_OVERSUBSCRIBED"
SESSION_DIR = "OMPY_SESSION_DIR"

NODE_NAMES = "OMPY_NODE_NAMES"
RANK_NODES = "OMPY_RANK_NODES"
#: The job map: optional, but both or neither.
JOB_MAP_VARIABLES = (NODE_NAMES, RANK_NODES)
UNIVERSE_SIZE = "OMPY_UNIVERSE_SIZE"
UNIVERSE_BASE = "OMPY_UNIVERSE_BASE"
PARENT_PORT = "OMPY_PARENT_PORT"
#: Set by the launcher for every rank alike (not an identity variable: not in ALL_VARIABLES).
BINDING = "OMPY_BINDING"

#: Every required variable of the contract; all of them are set in a launched rank.
VARIABLES = (
    JOBID,
    RANK,
    SIZE,
    LOCAL_RANK,
    LOCAL_SIZE,
    NODE_ID,
    NODE_NAME,
    SERVER,
    SECRET,
    OVERSUBSCRIBED,
    SESSION_DIR,
)
#: Every variable :func:`environment_of` may set: what differs between the ranks of a job.
ALL_VARIABLES = (*VARIABLES, *JOB_MAP_VARIABLES, UNIVERSE_SIZE, UNIVERSE_BASE, PARENT_PORT)


class LaunchEnvironmentError(ValueError):
    """The launcher's variables are missing or malformed: a launcher bug or a tampered env."""


def environment_for_rank(
    *,
    jobid: str,
    rank: int,
    size: int,
    local_rank: int,
    local_size: int,
    node_id: int,
    node_name: str,
    server: tuple[str, int],
    secret: bytes,
    oversubscribed: bool,
    session_dir: str,
    rank_nodes: Sequence[int] = (),
    node_names: Sequence[str] = (),
    universe_size: int = 0,
    universe_base: int = 0,
    parent_port: str = "",
) -> dict[str, str]:
    """The variables to add to one rank's environment.

    The values are checked (through :class:`Identity`) before anything is launched, so a
    mapping mistake fails in the launcher with a clear message instead of in every rank.
    """
    identity = Identity(
        jobid=jobid,
        rank=rank,
        size=size,
        local_rank=local_rank,
        local_size=local_size,
        node_id=node_id,
        node_name=node_name,
        oversubscribed=oversubscribed,
        session_dir=session_dir,
        server=server,
        secret=secret,
        rank_nodes=tuple(rank_nodes),
        node_names=tuple(node_names),
        universe_size=universe_size,
        universe_base=universe_base,
        parent_port=parent_port,
    )
    return environment_of(identity)


def environment_of(identity: Identity) -> dict[str, str]:
    """The variables that describe a launched rank's identity."""
    if identity.singleton or identity.server is None or identity.secret is None:
        raise ValueError("a singleton has no launch environment")
    host, port = identity.server
    variables = {
        JOBID: identity.jobid,
        RANK: str(identity.rank),
        SIZE: str(identity.size),
        LOCAL_RANK: str(identity.local_rank),
        LOCAL_SIZE: str(identity.local_size),
        NODE_ID: str(identity.node_id),
        NODE_NAME: identity.node_name,
        SERVER: f"{host}:{port}",
        SECRET: identity.secret.hex(),
        OVERSUBSCRIBED: "1" if identity.oversubscribed else "0",
        SESSION_DIR: identity.session_dir,
    }
    if identity.rank_nodes:
        variables[NODE_NAMES] = ",".join(identity.node_names)
        variables[RANK_NODES] = encode_rank_nodes(identity.rank_nodes)
    if identity.universe_size:
        variables[UNIVERSE_SIZE] = str(identity.universe_size)
    if identity.universe_base:
        variables[UNIVERSE_BASE] = str(identity.universe_base)
    if identity.parent_port:
        variables[PARENT_PORT] = identity.parent_port
    return variables


def encode_rank_nodes(rank_nodes: Sequence[int]) -> str:
    """Run-length encoding of the node ids (ranks of a node are usually consecutive)."""
    runs: list[list[int]] = []
    for node in rank_nodes:
        if runs and runs[-1][0] == node:
            runs[-1][1] += 1
        else:
            runs.append([node, 1])
    return ",".join(str(node) if count == 1 else f"{node}*{count}" for node, count in runs)


def decode_rank_nodes(value: str) -> tuple[int, ...]:
    """The inverse of :func:`encode_rank_nodes`; :class:`LaunchEnvironmentError` if malformed."""
    nodes: list[int] = []
    for run in value.split(","):
        node, _star, count = run.partition("*")
        if not node.isascii() or not node.isdigit() or (_star and not count.isdigit()):
            raise _bad(RANK_NODES, value, "node ids with optional repeat counts, e.g. '0*4,1*4'")
        nodes.extend([int(node)] * (int(count) if _star else 1))
    return tuple(nodes)


def is_launched(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` looks like a launched rank's (any contract variable is set)."""
    return any(name in environ for name in VARIABLES)


def identity_from_environment(environ: Mapping[str, str]) -> Identity:
    """Read a launched rank's identity; :class:`LaunchEnvironmentError` names what is wrong."""
    missing = [name for name in VARIABLES if name not in environ]
    if missing == [SECRET]:
        raise LaunchEnvironmentError(
            f"this process has a rank's {JOBID} and {RANK} but no {SECRET}: a rank removes the "
            f"job's secret from its environment once it read it, so the processes it starts "
            f"cannot join its job; start MPI programs with 'ompy run', or unset the OMPY_ "
            f"variables to run this one as a singleton"
        )
    if missing:
        raise LaunchEnvironmentError(
            f"this process was started by a launcher (some OMPY_ variables are set) but "
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing; start it "
            f"with 'ompy run', or unset the OMPY_ variables to run it as a singleton"
        )
    optional: dict[str, Any] = {}
    given = [name for name in JOB_MAP_VARIABLES if name in environ]
    if len(given) == 1:
        other = RANK_NODES if given[0] == NODE_NAMES else NODE_NAMES
        raise LaunchEnvironmentError(
            f"the launch environment sets {given[0]} but not {other}: both or neither"
        )
    if given:
        optional["node_names"] = tuple(_token(environ, NODE_NAMES).split(","))
        optional["rank_nodes"] = decode_rank_nodes(environ[RANK_NODES])
    if UNIVERSE_SIZE in environ:
        optional["universe_size"] = _int(environ, UNIVERSE_SIZE)
    if UNIVERSE_BASE in environ:
        optional["universe_base"] = _int(environ, UNIVERSE_BASE)
    if PARENT_PORT in environ:
        optional["parent_port"] = _token(environ, PARENT_PORT)
    try:
        identity = Identity(
            jobid=_token(environ, JOBID),
            rank=_int(environ, RANK),
            size=_int(environ, SIZE),
            local_rank=_int(environ, LOCAL_RANK),
            local_size=_int(environ, LOCAL_SIZE),
            node_id=_int(environ, NODE_ID),
            node_name=_token(environ, NODE_NAME),
            oversubscribed=_flag(environ, OVERSUBSCRIBED),
            session_dir=_token(environ, SESSION_DIR),
            server=_address(environ, SERVER),
            secret=_secret(environ, SECRET),
            **optional,
        )
    except LaunchEnvironmentError:
        raise
    except (ValueError, TypeError) as error:
        raise LaunchEnvironmentError(f"the launch environment is inconsistent: {error}") from None
    return identity


def _bad(name: str, value: str, expected: str) -> LaunchEnvironmentError:
    return LaunchEnvironmentError(
        f"environment variable {name}={value!r} is malformed: expected {expected}"
    )


def _token(environ: Mapping[str, str], name: str) -> str:
    value = environ[name]
    if not value.strip() or value != value.strip():
        raise _bad(name, value, "a non-empty value without surrounding spaces")
    return value


def _int(environ: Mapping[str, str], name: str) -> int:
    value = environ[name]
    if not value.isascii() or not value.isdigit():
        raise _bad(name, value, "a non-negative decimal integer")
    return int(value)


def _flag(environ: Mapping[str, str], name: str) -> bool:
    value = environ[name]
    if value not in ("0", "1"):
        raise _bad(name, value, "'1' or '0'")
    return value == "1"


def _address(environ: Mapping[str, str], name: str) -> tuple[str, int]:
    value = environ[name]
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isascii() or not port.isdigit():
        raise _bad(name, value, "'host:port', e.g. '127.0.0.1:40123'")
    if not 0 < int(port) < 65536:
        raise _bad(name, value, "a port between 1 and 65535")
    return host, int(port)


def _secret(environ: Mapping[str, str], name: str) -> bytes:
    value = environ[name]
    try:
        secret = bytes.fromhex(value)
    except ValueError:
        secret = b""
    if len(secret) != SECRET_SIZE:
        # never echo the value: it is (part of) a secret
        raise LaunchEnvironmentError(
            f"environment variable {name} is malformed: expected {2 * SECRET_SIZE} hex digits, "
            f"got {len(value)} characters"
        )
    return secret
