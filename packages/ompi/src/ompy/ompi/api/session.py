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

``Get_info`` and ``Get_pset_info`` return new ``MPI.Info`` objects; ``info`` arguments are
``MPI.Info`` (or ``INFO_NULL``/None).  Error handlers (``Session.Init(errhandler=...)``,
``Set_errhandler``, ...) come from :mod:`.errhandler`, whose mixin this class inherits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self, TypeVar, cast

import attrs

from .. import boot
from ..constants import THREAD_FUNNELED, THREAD_MULTIPLE, THREAD_SERIALIZED, THREAD_SINGLE
from ..errhandler import ERRORS_RETURN, ErrhandlerObject
from ..errors import ERR_ARG, ERR_INFO_VALUE, ERR_SESSION
from ..errors import Exception as MPIException
from ..group import Group, Members
from ..handle import Handle, predefine
from ..instance import Instance, acquire, release, world_state
from ..threads import provide
from .bsend import BsendPool
from .buffering import SessionBuffering
from .checks import as_int
from .errhandler import Errhandler, SessionErrhandlers, errhandler_object
from .info import INFO_NULL, Info, info_items

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


def granted_level(info: object, call: str) -> int:
    """The thread level a session with ``info`` gets: what its ``thread_level`` asks for
    (``THREAD_MULTIPLE`` without one), at most what ompy provides."""
    from .init import MAX_THREAD_LEVEL  # the world model's module imports the communicators

    text = info_items(info, call).get("thread_level")
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
    #: The session's error handler (``ERRORS_RETURN`` unless ``Init`` or ``Set_errhandler``
    #: said otherwise).
    errhandler: ErrhandlerObject
    #: Lets go of the instance; None for a session that holds no reference (:func:`session_on`).
    release: Callable[[], None] | None
    finalized: bool = False
    #: The session's buffered-send buffer (``Session.Attach_buffer``), made on first use.
    bsend: BsendPool | None = None


class Session(SessionErrhandlers, SessionBuffering, Handle, referent="_s"):
    """Session context."""

    __slots__ = ("_s",)

    _s: SessionState | None

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

    def _instance_for_handles(self) -> Any:
        state = self._s
        return state.instance if state is not None else super()._instance_for_handles()

    def _free(self) -> None:
        """``free()`` of a live session finalizes it (mpi4py's meaning)."""
        self.Finalize()

    # -- life cycle --------------------------------------------------------------------------

    @classmethod
    def Init(cls, info: Info = INFO_NULL, errhandler: Errhandler | None = None) -> Self:
        """Create a new session."""
        level = granted_level(info, "Session.Init")
        handler = errhandler_object(errhandler, "session", "Session.Init")
        instance = acquire(lambda: boot.start(level))
        provide(instance, level)
        return cls._of(SessionState(instance, level, handler, lambda: release(boot.stop)))

    def Finalize(self) -> None:
        """Finalize a session."""
        state = self._live("Session.Finalize")
        state.finalized = True
        self._s = None
        if state.release is None:
            return
        if world_state().holders == 1:  # the last holder: buffered sends must leave first
            instance = state.instance
            instance.engine.wait_until(lambda: instance.bsend.outstanding == 0)
        state.release()

    # -- process sets --------------------------------------------------------------------------

    def Get_num_psets(self, info: Info = INFO_NULL) -> int:
        """Number of available process sets."""
        self._live("Session.Get_num_psets")
        info_items(info, "Session.Get_num_psets")
        return len(PSETS)

    def Get_nth_pset(self, n: int, info: Info = INFO_NULL) -> str:
        """Name of the *n*-th process set."""
        self._live("Session.Get_nth_pset")
        n = as_int(n, "Session.Get_nth_pset: n")
        info_items(info, "Session.Get_nth_pset")
        if not 0 <= n < len(PSETS):
            raise MPIException(
                ERR_ARG,
                f"Session.Get_nth_pset: there is no process set {n}; this session has "
                f"{len(PSETS)} (0..{len(PSETS) - 1})",
            )
        return PSETS[n]

    def Get_info(self) -> Info:
        """Return the current hints for a session."""
        state = self._live("Session.Get_info")
        return Info.Create({"thread_level": THREAD_LEVEL_NAMES[state.thread_level]})

    def Get_pset_info(self, pset_name: str) -> Info:
        """Return the current hints for a session and process set."""
        state = self._live("Session.Get_pset_info")
        procs = pset_procs(state.instance, pset_name, "Session.Get_pset_info")
        return Info.Create({"mpi_size": str(len(procs))})

    def Create_group(self, pset_name: str) -> Group:
        """Create a new group from session and process set."""
        return pset_group(self, pset_name, Group, "Session.Create_group")


#: Null session handler.
SESSION_NULL = predefine(Session(), "SESSION_NULL", 0)


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
    members = Members(procs, instance.world_rank, instance=instance, session=session._s)
    return cast(G, kind._of(members))


def session_on(instance: Instance, info: Info = INFO_NULL) -> Session:
    """A session on ``instance`` that holds no reference to the default instance.

    How a test gives each rank of an in-process loopback world (:mod:`.testing`) a session of
    its own: ``Session.Init`` would share the one default instance of the interpreter.
    """
    level = granted_level(info, "session_on")
    return Session._of(SessionState(instance, level, ERRORS_RETURN, None))
