"""``MPI_THREAD_MULTIPLE``: the locked variants an instance switches to, and nothing else.

The design is in docs/architecture.md ("Threads").  In short: one lock per process, the
progress engine's reentrant :attr:`~ompy.opal.progress.ProgressEngine.lock` (the *MPI lock*),
guards everything the PML reaches (matching, sequence numbers, protocols, the BML and the
transports' rings, sockets and queues) and everything in the instance that several threads
could change at once (context-id agreement, the attached buffer, completion callbacks being
attached).  It is taken only when ``MPI_THREAD_MULTIPLE`` was granted: :func:`provide` then
switches the engine to its threaded wait and replaces the PML module's entry points by locked
ones, on the module object itself, so every communicator (made before or after) calls them.
Below ``MPI_THREAD_MULTIPLE`` nothing here runs and no lock is taken on the message path.

A blocking call never holds the lock while it waits: it holds it for one progress pass at a
time (the engine's threaded wait), so that other threads' calls and passes get in between.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .constants import THREAD_MULTIPLE

if TYPE_CHECKING:
    from ompy.opal.progress import ProgressEngine

    from .instance import Instance

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

    Reaching ``MPI_THREAD_MULTIPLE`` switches the engine and the PML to their locked
    variants, once.  The caller is the only thread in MPI (``Init_thread``, ``Session.Init``).
    """
    instance.thread_level = max(instance.thread_level, level)
    if instance.thread_level >= THREAD_MULTIPLE and not instance.engine.threaded:
        lock_pml(instance.pml, instance.engine)
        instance.engine.enable_threads()
    return instance.thread_level


def lock_pml(pml: Any, engine: ProgressEngine) -> None:
    """Make the entry points of ``pml`` (the module object) run under ``engine.lock``.

    The locked methods are set on the object, so holders of the module (every communicator
    caches ``instance.pml``) call them without knowing.  A method the module does not have is
    skipped: ``send_view``, ``irecv_view`` and ``isend_view`` are ob1's fast paths, which the
    API layer uses when a PML offers them.
    """
    lock = engine.lock
    for name in LOCKED_PML_METHODS:
        if hasattr(pml, name):
            setattr(pml, name, _locked(getattr(pml, name), lock))
    for name in NOTIFYING_PML_METHODS:
        if hasattr(pml, name):
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
