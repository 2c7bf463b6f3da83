"""MPI-4 sessions: ``MPI.Session``, its process sets and its thread level.

A session is a handle on the process's MPI instance that does not need the world model.
``Session.Init`` takes a reference to the default instance exactly as ``MPI.Init_thread`` does
(``acquire(lambda: boot.start(level))``) and ``Finalize`` lets go of it
(``release(boot.stop)``), so any number of sessions and the world model share one instance:

- ``Session.Init`` before ``MPI.Init`` starts the instance (run-time, PML, modex fence: the first
  start is collective over the job, as ``MPI.Init`` is); ``MPI.Init`` afterwards reuses it;
- ``MPI.Finalize`` while a session lives frees ``COMM_WORLD`` and ``COMM_SELF`` but keeps the
  instance, and every communicator built from a session keeps working;
- the last holder tears the instance down (frameworks, a fence over the job, the run-time).
  The run-time of a process starts once, so a ``Session.Init`` after that raises.

Thread levels: the info key ``thread_level`` asks for ``MPI_THREAD_SINGLE`` ..
``MPI_THREAD_MULTIPLE``; without it a session asks for ``MPI_THREAD_MULTIPLE``, since the
standard advises against ``SINGLE`` as the sessions' default (it conflicts with other
components of the program).  A session is granted ``min(requested, MAX_THREAD_LEVEL)`` and
``Get_info`` reports it.  The instance provides the highest level any holder was granted: a
session granted more than the instance started with raises the instance's level (what
``Query_thread`` reports), never lowers it.

Process sets: ``mpi://WORLD`` (every process of the job), ``mpi://SELF`` (the caller) and
``mpix://SHARED`` (the processes on the caller's node, Open MPI's name for it).
``Get_pset_info`` reports ``mpi_size``.  Groups made from a process set carry the session's
instance, which ``Intracomm.Create_from_group`` builds the communicator on (:mod:`.from_group`).

Info results (``Get_info``, ``Get_pset_info``) are :class:`SessionInfo` objects: read-only
mappings with ``MPI.Info``'s reading methods.  ``MPI.Info`` is written on another branch;
when it is merged, the lead engineer replaces :class:`SessionInfo` and :func:`hints` with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Self, TypeVar, cast

import attrs

from .. import boot
from ..constants import THREAD_FUNNELED, THREAD_MULTIPLE, THREAD_SERIALIZED, THREAD_SINGLE
from ..errors import ERR_ARG, ERR_INFO_VALUE, ERR_SESSION
from ..errors import Exception as MPIException
from ..group import Group, Members
from ..handle import Handle
from ..instance import Instance, acquire, release, world_state
from ..threads import provide
from .checks import as_int

G = TypeVar("G", bound=Group)

#: The longest process-set name (``MPI_MAX_PSET_NAME_LEN``, Open MPI's value).
MAX_PSET_NAME_LEN = 512
#: The process sets every session offers, in ``Get_nth_pset`` order.
PSETS = ("mpi://WORLD", "mpi://SELF", "mpix://SHARED")
#: The values of the ``thread_level`` info key, by level.
THREAD_LEVEL_NAMES = {
    THREAD_SINGLE: "MPI_THREAD_SINGLE",
    THREAD_FUNNELED: "MPI_THREAD_FUNNELED",
    THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED",
    THREAD_MULTIPLE: "MPI_THREAD_MULTIPLE",
}


# -- info (MPI.Info replaces these at merge) ------------------------------------------------------


class SessionInfo(Mapping[str, str]):
    """The hints a session reports: a read-only mapping with ``MPI.Info``'s reading methods.

    Replaced by ``MPI.Info`` when the branch that writes it is merged.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, str]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: str) -> str:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"<SessionInfo {self._items!r}>"

    def Get(self, key: str) -> str | None:
        """Retrieve the value associated with a key (None if absent)."""
        if not isinstance(key, str):
            raise TypeError(f"Info.Get: the key must be a str, not {type(key).__name__}")
        return self._items.get(key)

    def Get_nkeys(self) -> int:
        """Return the number of currently defined keys in info."""
        return len(self._items)

    def Get_nthkey(self, n: int) -> str:
        """Return the *n*-th defined key in info."""
        n = as_int(n, "Info.Get_nthkey: n")
        keys = list(self._items)
        if not 0 <= n < len(keys):
            raise MPIException(ERR_ARG, f"Info.Get_nthkey: {n} is not in 0..{len(keys) - 1}")
        return keys[n]

    def Free(self) -> None:
        """Free an info object (it is empty afterwards)."""
        self._items.clear()


def hints(info: object, call: str) -> dict[str, str]:
    """The key/value pairs of an ``info`` argument (None or a null/empty info: none).

    Replaced by a check for ``MPI.Info`` when the branch that writes it is merged.
    """
    if info is None:
        return {}
    if not isinstance(info, Mapping):
        raise TypeError(f"{call}: info must be an Info, not {type(info).__name__}")
    pairs = dict(info.items())
    for key, value in pairs.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"{call}: info keys and values are str, got {key!r}: {value!r}")
    return pairs


def granted_level(info: object, call: str) -> int:
    """The thread level a session with ``info`` gets: what its ``thread_level`` asks for
    (``THREAD_MULTIPLE`` without one), at most what ompy provides."""
    from .init import MAX_THREAD_LEVEL  # the world model's module imports the communicators

    text = hints(info, call).get("thread_level")
    if text is None:
        return MAX_THREAD_LEVEL
    for level, name in THREAD_LEVEL_NAMES.items():
        if text.strip().upper() == name:
            return min(level, MAX_THREAD_LEVEL)
    raise MPIException(
        ERR_INFO_VALUE,
        f"{call}: info thread_level = {text!r} is not one of "
        f"{', '.join(THREAD_LEVEL_NAMES.values())}",
    )


# -- sessions -------------------------------------------------------------------------------------


@attrs.define(eq=False)
class SessionState:
    """What a session handle refers to."""

    instance: Instance
    #: The thread level this session was granted.
    thread_level: int
    #: The error handler given to ``Session.Init`` (None: errors raise ``MPI.Exception``).
    errhandler: Any
    #: Lets go of the instance; None for a session that holds no reference (:func:`session_on`).
    release: Callable[[], None] | None
    finalized: bool = False


class Session(Handle, referent="_s"):
    """Session context."""

    __slots__ = ("_s",)

    def __init__(self, session: Session | None = None) -> None:
        if session is None:
            self._s: SessionState | None = None
        elif isinstance(session, Session):
            self._s = session._s
        else:
            raise TypeError(
                f"{type(self).__name__}() takes a Session to refer to, not {type(session).__name__}"
            )

    @classmethod
    def _of(cls, state: SessionState) -> Self:
        handle = cls.__new__(cls)
        handle._s = state
        return handle

    def _live(self, call: str) -> SessionState:
        state = self._s
        if state is None:
            raise MPIException(ERR_SESSION, f"{call}: the session is SESSION_NULL")
        if state.finalized:
            raise MPIException(ERR_SESSION, f"{call}: the session was finalized")
        return state

    def __repr__(self) -> str:
        state = self._s
        if state is None:
            return f"<{type(self).__name__} SESSION_NULL>"
        what = "finalized" if state.finalized else THREAD_LEVEL_NAMES[state.thread_level]
        return f"<{type(self).__name__} {what}>"

    def __reduce__(self) -> str | tuple[Any, ...]:
        if self is SESSION_NULL:
            return "SESSION_NULL"
        if self._s is None:
            return (type(self), ())
        kind = type(self)
        raise ValueError(f"cannot serialize '{kind.__module__}.{kind.__qualname__}' instance")

    def free(self) -> None:
        """Call `Finalize` if not null."""
        if self._s is not None:
            self.Finalize()

    # -- life cycle --------------------------------------------------------------------------

    @classmethod
    def Init(cls, info: Any = None, errhandler: Any = None) -> Self:
        """Create a new session."""
        level = granted_level(info, "Session.Init")
        instance = acquire(lambda: boot.start(level))
        provide(instance, level)
        return cls._of(SessionState(instance, level, errhandler, lambda: release(boot.stop)))

    def Finalize(self) -> None:
        """Finalize a session."""
        state = self._live("Session.Finalize")
        state.finalized = True
        self._s = None
        if state.release is None:
            return
        if world_state().holders == 1:  # the last holder: buffered sends must leave first
            instance = state.instance
            instance.engine.wait_until(lambda: instance.bsend.pending == 0)
        state.release()

    # -- process sets --------------------------------------------------------------------------

    def Get_num_psets(self, info: Any = None) -> int:
        """Number of available process sets."""
        self._live("Session.Get_num_psets")
        hints(info, "Session.Get_num_psets")
        return len(PSETS)

    def Get_nth_pset(self, n: int, info: Any = None) -> str:
        """Name of the *n*-th process set."""
        self._live("Session.Get_nth_pset")
        n = as_int(n, "Session.Get_nth_pset: n")
        hints(info, "Session.Get_nth_pset")
        if not 0 <= n < len(PSETS):
            raise MPIException(
                ERR_ARG,
                f"Session.Get_nth_pset: there is no process set {n}; this session has "
                f"{len(PSETS)} (0..{len(PSETS) - 1})",
            )
        return PSETS[n]

    def Get_info(self) -> SessionInfo:
        """Return the current hints for a session."""
        state = self._live("Session.Get_info")
        return SessionInfo({"thread_level": THREAD_LEVEL_NAMES[state.thread_level]})

    def Get_pset_info(self, pset_name: str) -> SessionInfo:
        """Return the current hints for a session and process set."""
        state = self._live("Session.Get_pset_info")
        procs = pset_procs(state.instance, pset_name, "Session.Get_pset_info")
        return SessionInfo({"mpi_size": str(len(procs))})

    def Create_group(self, pset_name: str) -> Group:
        """Create a new group from session and process set."""
        return pset_group(self, pset_name, Group, "Session.Create_group")


#: Null session handler.
SESSION_NULL = Session()


def pset_procs(instance: Instance, pset_name: object, call: str) -> tuple[int, ...]:
    """The world ranks of the process set ``pset_name``, seen from ``instance``'s process."""
    if not isinstance(pset_name, str):
        raise TypeError(f"{call}: pset_name must be a str, not {type(pset_name).__name__}")
    if pset_name == "mpi://WORLD":
        return tuple(range(instance.world_size))
    if pset_name == "mpi://SELF":
        return (instance.world_rank,)
    if pset_name == "mpix://SHARED":
        node = instance.procs[instance.world_rank].node_id
        return tuple(rank for rank, proc in enumerate(instance.procs) if proc.node_id == node)
    raise MPIException(
        ERR_ARG,
        f"{call}: {pset_name!r} is not a process set of this session (process sets: "
        f"{', '.join(PSETS)})",
    )


def pset_group(session: object, pset_name: object, kind: type[G], call: str) -> G:
    """The group of a session's process set, as a ``kind`` handle."""
    if not isinstance(session, Session):
        raise TypeError(f"{call}: expecting a Session, not {type(session).__name__}")
    instance = session._live(call).instance
    procs = pset_procs(instance, pset_name, call)
    return cast(G, kind._of(Members(procs, instance.world_rank, instance=instance)))


def session_on(instance: Instance, info: Any = None) -> Session:
    """A session on ``instance`` that holds no reference to the default instance.

    How a test gives each rank of an in-process loopback world (:mod:`.testing`) a session of
    its own: ``Session.Init`` would share the one default instance of the interpreter.
    """
    level = granted_level(info, "session_on")
    return Session._of(SessionState(instance, level, None, None))
