"""``MPI_THREAD_MULTIPLE``: the locked variants an instance switches to, and when it does.

The design is in docs/architecture.md ("Threads").  In short: one lock per process, the
progress engine's reentrant :attr:`~ompy.opal.progress.ProgressEngine.lock` (the *MPI lock*),
guards everything the PML reaches (matching, sequence numbers, protocols, the BML and the
transports' rings, sockets and queues) and everything in the instance that several threads
could change at once (context-id agreement, the attached buffer, completion callbacks being
attached).  It is taken only once an instance granted ``MPI_THREAD_MULTIPLE`` *goes threaded*
(:func:`go_threaded`): the engine switches to its threaded wait and the PML module's entry
points are replaced by locked ones, on the module object itself, so every communicator (made
before or after) calls them.  Before that, nothing here runs and no lock is taken on the
message path.

Lazy activation: a program granted ``MPI_THREAD_MULTIPLE`` (the default of ``from ompy import
MPI``) that never starts a thread must not pay for the lock.  So :func:`provide` grants the
level (``Query_thread`` says so) but switches only when a second thread could call MPI:

* at once, if threads of the program already exist (:func:`program_threads`; ompy's own
  :class:`~ompy.opal.threads.InternalThread` do not count);
* otherwise in the thread that starts the next thread, before that thread exists: a wrapper of
  ``threading.Thread.start`` (:class:`StartHook`, installed once per process) switches every
  instance waiting for it, then starts the thread.  ``concurrent.futures`` executors and
  asyncio's ``to_thread`` start their threads that way too;
* or when the program says so with :func:`activate`, which a program that starts threads with
  ``_thread.start_new_thread`` (the hook cannot see them) calls before it does.

A blocking call never holds the lock while it waits: it holds it for one progress pass at a
time (the engine's threaded wait), so that other threads' calls and passes get in between.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ompy.opal.threads import InternalThread

from .constants import THREAD_MULTIPLE

if TYPE_CHECKING:
    from ompy.opal.progress import ProgressEngine

    from .instance import Instance
    from .mca.pml.interface import PmlModule

#: The PML entry points that run under the MPI lock.  Each reads or changes matching state,
#: sequence numbers, protocol tables or a transport.  An entry point added to the PML
#: interface is one more name here.  Not here: ``finalize`` (it waits, and runs alone) and
#: ``progress``, which the engine calls under the lock as one of its callbacks (callers
#: outside the engine progress through ``engine.progress``).
LOCKED_PML_METHODS: tuple[str, ...] = (
    "add_procs",
    "del_procs",
    "add_comm",
    "del_comm",
    "irecv",
    "irecv_view",
    "recv_now",
    "iprobe",
    "improbe",
    "imrecv",
)
#: Entry points that may complete *another* thread's request before they return (a send to
#: this very process is delivered into its matching at once): they also wake the threads
#: waiting in the engine.
NOTIFYING_PML_METHODS: tuple[str, ...] = ("isend", "isend_view", "send_view")


def provide(instance: Instance, level: int) -> int:
    """Raise ``instance`` to thread level ``level`` (never lower it); the level it now has.

    At ``MPI_THREAD_MULTIPLE`` the instance goes threaded at once if other threads of the
    program exist, else when the next one is started (:class:`StartHook`).  The caller is
    the only thread in MPI (``Init_thread``, ``Session.Init``).
    """
    instance.thread_level = max(instance.thread_level, level)
    if instance.thread_level >= THREAD_MULTIPLE and not instance.engine.threaded:
        if program_threads():
            go_threaded(instance)
        else:
            StartHook.installed().wait_for(instance)
    return instance.thread_level


def go_threaded(instance: Instance) -> None:
    """Switch ``instance`` to the locked variants if it was granted ``MPI_THREAD_MULTIPLE``.

    Idempotent.  The caller is the one thread that uses the instance (the next one is not
    started yet); if it is inside one of the engine's passes, the engine keeps the lock for
    the rest of that pass (:meth:`~ompy.opal.progress.ProgressEngine.enable_threads`).
    """
    engine = instance.engine
    if instance.thread_level < THREAD_MULTIPLE or engine.threaded:
        return
    lock_pml(instance.pml, engine)
    engine.enable_threads()


def activate() -> None:
    """Switch every instance granted ``MPI_THREAD_MULTIPLE`` to its locked variants now.

    For programs that start threads without ``threading`` (``_thread.start_new_thread``, a C
    extension's threads that call MPI through Python): call it before starting the first.
    """
    StartHook.installed().switch()


def program_threads() -> list[threading.Thread]:
    """The live threads other than the caller's that may call MPI (not ompy's own)."""
    current = threading.current_thread()
    return [
        thread
        for thread in threading.enumerate()
        if thread is not current and not isinstance(thread, InternalThread)
    ]


class StartHook:
    """The wrapper of ``threading.Thread.start``: switches waiting instances, then starts.

    One per process, installed by the first :func:`provide` at ``MPI_THREAD_MULTIPLE`` and
    never removed (it costs a length test per thread start once nothing waits).  It is set
    on the class, so threads of every ``Thread`` subclass go through it (a subclass's own
    ``start`` calls ``super().start()``).  Starting an :class:`InternalThread` switches
    nothing: ompy's own threads never call MPI.
    """

    def __init__(self, original: Callable[[threading.Thread], None]) -> None:
        self.original = original
        #: The instances granted ``MPI_THREAD_MULTIPLE`` that have not gone threaded yet.
        self.waiting: weakref.WeakSet[Instance] = weakref.WeakSet()
        # Guards ``waiting``.  A switch under it may take an engine's lock (enable_threads'
        # hold), so it comes before the MPI lock; it is never taken under the MPI lock of an
        # instance that waits (a waiting instance is not threaded: no thread holds its lock).
        self._lock = threading.Lock()

    @classmethod
    def installed(cls) -> StartHook:
        """The process's hook, installed on ``threading.Thread`` now if it was not."""
        hook = threading.Thread.__dict__["start"]
        if not isinstance(hook, cls):
            hook = cls(hook)
            threading.Thread.start = hook  # type: ignore[method-assign,assignment]
        return hook

    def wait_for(self, instance: Instance) -> None:
        """Switch ``instance`` when the next thread starts."""
        with self._lock:
            self.waiting.add(instance)

    def switch(self) -> None:
        """Switch every waiting instance now."""
        with self._lock:
            for instance in list(self.waiting):
                instance.go_threaded()
            self.waiting.clear()

    def __get__(self, thread: threading.Thread | None, owner: type | None = None) -> Any:
        if thread is None:
            return self
        return functools.partial(self.start, thread)

    def start(self, thread: threading.Thread) -> None:
        """``thread.start()``: the waiting instances go threaded first (the new thread's first
        MPI call already finds them locked)."""
        if self.waiting and not isinstance(thread, InternalThread):
            self.switch()
        self.original(thread)


def lock_pml(pml: PmlModule, engine: ProgressEngine) -> None:
    """Make the entry points of ``pml`` (the module object) run under ``engine.lock``.

    The locked methods are set on the object, so holders of the module (every communicator
    caches ``instance.pml``) call them without knowing.  Every name listed is part of the PML
    interface, so every PML has it.
    """
    lock = engine.lock
    for name in LOCKED_PML_METHODS:
        setattr(pml, name, _locked(getattr(pml, name), lock))
    for name in NOTIFYING_PML_METHODS:
        setattr(pml, name, _locked_notifying(getattr(pml, name), lock, engine))


def _locked(method: Callable[..., Any], lock: threading.RLock) -> Callable[..., Any]:
    # Positional arguments only, as every caller passes them: ``**kwargs`` would cost a few
    # percent of a short message's latency under THREAD_MULTIPLE.
    @functools.wraps(method)
    def locked(*args: Any) -> Any:
        with lock:
            return method(*args)

    return locked


def _locked_notifying(
    method: Callable[..., Any], lock: threading.RLock, engine: ProgressEngine
) -> Callable[..., Any]:
    notify = engine.notify

    @functools.wraps(method)
    def locked(*args: Any) -> Any:
        with lock:
            result = method(*args)
            if engine.waiting:  # no thread waits: none can miss this completion
                notify()
            return result

    return locked
