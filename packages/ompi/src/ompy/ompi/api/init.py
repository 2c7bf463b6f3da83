"""The world model: ``MPI.Init``/``Init_thread``/``Finalize`` and ``COMM_WORLD``/``COMM_SELF``.

``Init_thread`` takes a reference to the process's default instance (building it with the
run-time on first use: :mod:`ompy.ompi.boot`), creates ``COMM_WORLD`` (context id 0) and
``COMM_SELF`` (1) on it, and fences, so no process sends before every process can receive.
Importing ``ompy.MPI`` does this unless ``ompy.rc.initialize`` is off (:mod:`ompy.rc`).

``Finalize`` waits for pending buffered sends, synchronizes the world (a barrier that keeps
progressing, so outgoing data is delivered), fences, frees the predefined communicators and lets
go of the instance, which is torn down once no session holds it either.  It runs at exit when
``ompy.rc.finalize`` says so (by default: when the import initialized MPI, as with mpi4py; a
program that calls ``Init`` itself calls ``Finalize`` too), but not after an uncaught exception:
then the launcher reports the failure and ends the job.  Nor after ``sys.exit`` while another
rank has not reached Finalize (the run-time's ``leave_if_early``): the others may be blocked on
this rank, so it leaves with its exit status and the launcher ends the job.  A rank that exits
without finalizing (Finalize at exit failed, or off and not called) says so, and the launcher
ends the job too (Open MPI's rule: every rank that initialized must finalize).
"""

from __future__ import annotations

import atexit
import contextlib
import sys
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import attrs

from .. import boot
from ..constants import (
    THREAD_MULTIPLE,
    THREAD_SINGLE,
)
from ..errors import ERR_ARG, ERR_OTHER
from ..errors import Exception as MPIException
from ..instance import Instance, acquire, adopt, adopted, current, release, world_state
from ..threads import provide
from . import rcoptions
from .attributes import delete_attributes, install_predefined
from .comm import COMM_SELF, COMM_WORLD
from .communicator import Communicator
from .dpm import connect_parent
from .internal import barrier

#: The level of thread support ompy provides at most: with ``THREAD_MULTIPLE`` the instance
#: switches to its locked variants (:mod:`ompy.ompi.threads`).
MAX_THREAD_LEVEL = THREAD_MULTIPLE
THREAD_LEVELS = rcoptions.THREAD_LEVELS


# -- initialization ------------------------------------------------------------------------------


def Init() -> None:
    """Initialize the MPI execution environment."""
    Init_thread(THREAD_SINGLE)


def Init_thread(required: int = THREAD_MULTIPLE) -> int:
    """Initialize the MPI execution environment with a thread level; returns the level given."""
    _check_not_started("Init_thread")
    if isinstance(required, bool) or not isinstance(required, int):
        raise TypeError(f"Init_thread: required must be an int, not {type(required).__name__}")
    if not THREAD_SINGLE <= required <= THREAD_MULTIPLE:
        raise MPIException(
            ERR_ARG,
            f"Init_thread: required thread level {required} is not one of THREAD_SINGLE (0), "
            "THREAD_FUNNELED (1), THREAD_SERIALIZED (2), THREAD_MULTIPLE (3)",
        )
    provided = min(required, MAX_THREAD_LEVEL)
    instance = acquire(lambda: boot.start(provided))
    provide(instance, provided)  # a session may have started it, at another level
    _install(instance)
    boot.fence_progressing(instance)
    if instance.runtime is not None:
        _install_exit_hooks()
    return instance.thread_level


def _check_not_started(call: str) -> None:
    state = world_state()
    if state.world_finalized:
        raise MPIException(ERR_OTHER, f"{call}: MPI was finalized and cannot be initialized again")
    if state.world_initialized:
        raise MPIException(ERR_OTHER, f"{call}: MPI is already initialized")


def _install(instance: Instance) -> None:
    """Create the predefined communicators on ``instance``; MPI is initialized afterwards.

    Also used by tests to make a loopback instance this interpreter's MPI process
    (with :func:`ompy.ompi.instance.adopt`).
    """
    world = Communicator.create(
        instance, 0, tuple(range(instance.world_size)), "MPI_COMM_WORLD", predefined=True
    )
    install_predefined(world)
    self_comm = Communicator.create(
        instance, 1, (instance.world_rank,), "MPI_COMM_SELF", predefined=True
    )
    COMM_WORLD._c = world
    COMM_SELF._c = self_comm
    world_state().world_initialized = True
    connect_parent(instance, world)  # a spawned job meets its parents (Comm.Get_parent)


def _install_exit_hooks() -> None:
    state = world_state()
    if state.exit_hooks:
        return
    state.exit_hooks = True
    previous = sys.excepthook

    def excepthook(
        kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        state.uncaught = True
        previous(kind, value, tb)

    sys.excepthook = excepthook
    atexit.register(_finalize_at_exit)


def _finalize_at_exit() -> None:
    state = world_state()
    if state.uncaught or not state.world_initialized or state.world_finalized:
        return
    runtime = current("Finalize").runtime
    options = state.options
    if options is not None and not options.finalize:
        if runtime is not None:
            runtime.unfinished("MPI.Finalize was not called, and ompy.rc.finalize is off")
        return
    if runtime is not None:
        runtime.leave_if_early()  # returns only if this rank may finalize with the others
    try:
        Finalize()
    except BaseException as error:
        if runtime is not None:
            runtime.unfinished(
                f"the implicit MPI.Finalize at exit raised {type(error).__name__}: {error}"
            )
        raise


# -- finalization --------------------------------------------------------------------------------


def Finalize() -> None:
    """Terminate the MPI execution environment."""
    state = world_state()
    if not state.world_initialized or state.world_finalized:
        what = "finalized" if state.world_finalized else "not initialized"
        raise MPIException(ERR_OTHER, f"Finalize: MPI is {what}")
    instance = current("Finalize")
    if instance.runtime is not None:
        instance.runtime.announce_finalizing()
    world, self_comm = COMM_WORLD._c, COMM_SELF._c
    # MPI's rule: first the equivalent of freeing COMM_SELF (its attributes' delete callbacks,
    # the last set first), before anything else is torn down; then COMM_WORLD's attributes.
    for communicator in (self_comm, world):
        if communicator is not None:
            delete_attributes(communicator)
    instance.engine.wait_until(lambda: instance.bsend.outstanding == 0)
    if world is not None and world.size > 1:
        barrier(world)
    # Everyone leaves the barrier before anyone tears down its BTLs: a rank's last barrier
    # message may still wait in a BTL queue (tcp connects lazily) that only progress empties.
    boot.fence_progressing(instance)
    for communicator in (self_comm, world):
        if communicator is not None:
            communicator.destroy()
    state.world_finalized = True
    release(boot.stop)


def _uninstall() -> None:
    """Forget the MPI process without finalizing (tests of the loopback world)."""
    for handle in (COMM_WORLD, COMM_SELF):
        if handle._c is not None:
            handle._c.destroy()
        handle._c = None
    adopt(None)


@contextlib.contextmanager
def _installed(instance: Instance) -> Iterator[Instance]:
    """``instance`` as this interpreter's MPI process while the block runs (tests of the
    loopback world), then the interpreter's MPI as it was."""
    saved = COMM_WORLD._c, COMM_SELF._c
    with adopted(instance):
        _install(instance)
        try:
            yield instance
        finally:
            for handle, was in zip((COMM_WORLD, COMM_SELF), saved, strict=True):
                if handle._c is not None and handle._c is not was:
                    handle._c.destroy()
                handle._c = was


# -- queries -------------------------------------------------------------------------------------


def Is_initialized() -> bool:
    """Indicate whether ``Init`` has been called."""
    return world_state().world_initialized


def Is_finalized() -> bool:
    """Indicate whether ``Finalize`` has completed."""
    return world_state().world_finalized


def Query_thread() -> int:
    """Return the level of thread support provided by the MPI library."""
    return current("Query_thread").thread_level


def Is_thread_main() -> bool:
    """Indicate whether this thread called ``Init``."""
    return threading.current_thread() is current("Is_thread_main").main_thread


# -- buffered sends ------------------------------------------------------------------------------


def Attach_buffer(buf: Any) -> None:
    """Attach a user-provided buffer for sending in buffered mode (None: automatic)."""
    current("Attach_buffer").bsend.attach(buf)


def Detach_buffer() -> Any:
    """Remove an existing attached buffer, once the buffered sends using it are done."""
    instance = current("Detach_buffer")
    pool = instance.bsend
    instance.engine.wait_until(lambda: pool.pending == 0)
    return pool.detach()


def init_on_import() -> None:
    """What importing ``ompy.MPI`` does: read ``ompy.rc``, then initialize as it says.

    ``rc.threads`` (the default) initializes with ``Init_thread(rc.thread_level)``, otherwise
    with ``Init()``.  MPI initialized already (the module imported again) is left as it is and
    not finalized at exit by this import's options, as mpi4py does.
    """
    options = rcoptions.resolve()
    state = world_state()
    if state.world_initialized:
        state.options = attrs.evolve(options, finalize=False)
        return
    state.options = options
    if not options.initialize:
        return
    if options.threads:
        Init_thread(options.thread_level)
    else:
        Init()
