"""MPI initialization and finalization: the sequence that brings up the point-to-point stack.

``Init_thread`` (and ``Init``, and importing ``ompy.MPI`` unless ``rc.initialize`` is off):

1. start the run-time (``ompy.orte.runtime.init``): identity and modex;
2. build every world rank's :class:`~ompy.opal.proc.Proc` from the job map the launcher put
   in the identity (``ompy run`` always does), and stage this process's placement (node, pid,
   local rank) in the modex; without a job map, commit and fence first and build the procs
   from what every rank published (one more round trip through the launcher);
3. build the BTL context and the PML context, and select the PML (its selection opens the
   BTLs, which publish their contact information);
4. commit and fence, so every process sees every contact;
5. ``pml.add_procs`` (endpoints for every peer);
6. create ``COMM_WORLD`` (context id 0) and ``COMM_SELF`` (1) and register them with the PML;
7. fence, so no process sends before every process can receive.

``Finalize`` waits for pending buffered sends, synchronizes the world (a barrier that keeps
progressing, so outgoing data is delivered), frees the predefined communicators, finalizes the
PML, fences, and finalizes the run-time.  Unless ``rc.finalize`` is off it runs at exit, but not
after an uncaught exception: then the launcher reports the failure and ends the job.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any

from ..constants import (
    THREAD_FUNNELED,
    THREAD_MULTIPLE,
    THREAD_SERIALIZED,
    THREAD_SINGLE,
)
from ..errors import ERR_ARG, ERR_OTHER
from ..errors import Exception as MPIException
from ..group import set_world_group
from ..mca.coll import base as coll_base
from ..mca.op import base as op_base
from . import comm as comm_module
from . import rc
from .comm import COMM_SELF, COMM_WORLD
from .communicator import Communicator
from .internal import barrier
from .process import MpiProcess

#: The level of thread support ompy provides at most: the API and the PML are not locked,
#: so threads must not call MPI concurrently.
MAX_THREAD_LEVEL = THREAD_SERIALIZED
PROC_KEY = "ompi.proc"
THREAD_LEVELS = {
    "single": THREAD_SINGLE,
    "funneled": THREAD_FUNNELED,
    "serialized": THREAD_SERIALIZED,
    "multiple": THREAD_MULTIPLE,
}


class _State:
    process: MpiProcess | None = None
    runtime: Any = None
    framework: Any = None
    provided: int = THREAD_SINGLE
    main_thread: threading.Thread | None = None
    uncaught: bool = False
    hook_installed: bool = False


_state = _State()


def current_process(call: str) -> MpiProcess:
    """This process's MPI state, or an MPI error that says MPI is not usable now."""
    process = _state.process
    if process is None:
        state = "finalized" if comm_module.lifecycle["finalized"] else "not initialized"
        raise MPIException(ERR_OTHER, f"{call}: MPI is {state}")
    return process


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
    process, runtime, framework = _start()
    _install(process, runtime=runtime, framework=framework)
    _state.provided = min(required, MAX_THREAD_LEVEL)
    return _state.provided


def _check_not_started(call: str) -> None:
    if comm_module.lifecycle["finalized"]:
        raise MPIException(ERR_OTHER, f"{call}: MPI was finalized and cannot be initialized again")
    if comm_module.lifecycle["initialized"]:
        raise MPIException(ERR_OTHER, f"{call}: MPI is already initialized")


def _start() -> tuple[MpiProcess, Any, Any]:
    """Steps 1 to 5 of the module docstring: a process with its PML, ready for communicators."""
    from ompy.opal.mca.base import open_framework
    from ompy.opal.mca.btl import BtlContext
    from ompy.opal.mca.params import registry as param_registry
    from ompy.opal.proc import Proc
    from ompy.opal.progress import engine as progress_engine
    from ompy.orte import runtime as orte_runtime

    from ..mca.pml import framework as pml_framework
    from ..mca.pml.context import PmlContext

    runtime = orte_runtime.init()
    identity = runtime.identity
    modex = runtime.modex
    modex.put(
        PROC_KEY,
        {
            "node_id": identity.node_id,
            "node_name": identity.node_name,
            "pid": os.getpid(),
            "local_rank": identity.local_rank,
        },
    )
    if identity.rank_nodes:
        procs = _procs_from_job_map(identity, Proc)  # published with the contacts below
    else:
        modex.commit()
        modex.fence()
        procs = _procs_from_modex(identity, modex, Proc)
    me = procs[identity.rank]
    registry = param_registry()
    engine = progress_engine()
    secret = identity.secret if identity.secret is not None else os.urandom(32)
    btl_context = BtlContext(proc=me, modex=modex, secret=secret, progress=engine)
    framework = open_framework(pml_framework, registry)
    context = PmlContext(proc=me, procs=procs, btl_context=btl_context, registry=registry)
    _component, offer = framework.select_one(context)
    pml = offer.module
    modex.commit()
    modex.fence()
    pml.add_procs(procs)
    process = MpiProcess(
        pml=pml,
        engine=engine,
        world_rank=identity.rank,
        world_size=identity.size,
        procs=tuple(procs),
        abort=runtime.abort,
        processor_name=identity.node_name,
    )
    return process, runtime, framework


def _procs_from_job_map(identity: Any, proc_class: Any) -> list[Any]:
    """Every world rank's Proc from the job map the launcher gave (no modex round trip)."""
    return [
        proc_class(
            identity.jobid,
            rank,
            node_id=node,
            node_name=identity.node_names[node],
            local_rank=identity.local_rank_of(rank),
        )
        for rank, node in enumerate(identity.rank_nodes)
    ]


def _procs_from_modex(identity: Any, modex: Any, proc_class: Any) -> list[Any]:
    """Every world rank's Proc from what each published (a launcher without a job map)."""
    procs = []
    for rank in range(identity.size):
        info = modex.get(rank, PROC_KEY)
        procs.append(
            proc_class(
                identity.jobid,
                rank,
                node_id=info["node_id"],
                node_name=info["node_name"],
                local_rank=info["local_rank"],
            )
        )
    return procs


def _install(process: MpiProcess, *, runtime: Any = None, framework: Any = None) -> None:
    """Steps 6 and 7: the predefined communicators; MPI is initialized afterwards.

    Also used by tests to make a loopback process this interpreter's MPI process.
    """
    world = Communicator.create(
        process, 0, tuple(range(process.world_size)), "MPI_COMM_WORLD", predefined=True
    )
    self_comm = Communicator.create(
        process, 1, (process.world_rank,), "MPI_COMM_SELF", predefined=True
    )
    COMM_WORLD._c = world
    COMM_SELF._c = self_comm
    set_world_group(world.group)
    _state.process = process
    _state.runtime = runtime
    _state.framework = framework
    _state.main_thread = threading.current_thread()
    _state.provided = THREAD_SINGLE
    comm_module.lifecycle["initialized"] = True
    if runtime is not None:
        _fence_progressing(runtime.modex, process.engine)
        _install_exit_hooks()


def _fence_progressing(modex: Any, engine: Any) -> None:
    """A fence with the progress engine running meanwhile (as Open MPI's Init and Finalize do).

    A send may complete while its bytes still wait in a BTL queue (tcp connects lazily), and
    only progress makes them leave.  A rank blocked in a fence without progress would keep a
    peer waiting for those bytes, short of the fence, for ever: at the end of Init, the coll
    modules of COMM_WORLD have just exchanged set-up messages (coll/sm); in Finalize, the
    barrier's.
    """
    done = threading.Event()
    failure: list[BaseException] = []

    def fence() -> None:
        try:
            modex.fence()
        except BaseException as error:  # re-raised in the calling thread
            failure.append(error)
        finally:
            done.set()
            engine.wakeup()

    thread = threading.Thread(target=fence, name="ompy-init-fence", daemon=True)
    thread.start()
    engine.wait_until(done.is_set)
    thread.join()
    if failure:
        raise failure[0]


def _install_exit_hooks() -> None:
    if _state.hook_installed:
        return
    _state.hook_installed = True
    previous = sys.excepthook

    def excepthook(kind, value, tb) -> None:
        _state.uncaught = True
        previous(kind, value, tb)

    sys.excepthook = excepthook
    atexit.register(_finalize_at_exit)


def _finalize_at_exit() -> None:
    if not rc.finalize or _state.uncaught or _state.process is None:
        return
    if comm_module.lifecycle["finalized"]:
        return
    Finalize()


# -- finalization --------------------------------------------------------------------------------


def Finalize() -> None:
    """Terminate the MPI execution environment."""
    process = current_process("Finalize")
    world, self_comm = COMM_WORLD._c, COMM_SELF._c
    process.engine.wait_until(lambda: process.bsend.pending == 0)
    if world is not None and world.size > 1:
        barrier(world)
    if _state.runtime is not None:
        # Everyone leaves the barrier before anyone tears down its BTLs: a rank's last barrier
        # message may still wait in a BTL queue (tcp connects lazily) that only progress empties.
        _fence_progressing(_state.runtime.modex, process.engine)
    for communicator in (self_comm, world):
        if communicator is not None:
            communicator.destroy()
    coll_base.finalize()  # modules of communicators never freed, then coll's components
    op_base.finalize()  # after coll, whose modules reduce with op's kernels
    process.close()
    comm_module.lifecycle["finalized"] = True
    _state.process = None
    set_world_group(None)
    finalize_pml = getattr(process.pml, "finalize", None)
    if finalize_pml is not None:
        finalize_pml()
    if _state.framework is not None:
        _state.framework.close()
    runtime = _state.runtime
    if runtime is not None:
        runtime.modex.fence()
        runtime.finalize()


def _uninstall() -> None:
    """Forget the MPI process without finalizing (tests of the loopback world)."""
    for handle in (COMM_WORLD, COMM_SELF):
        if handle._c is not None:
            handle._c.destroy()
        handle._c = None
    set_world_group(None)
    _state.process = None
    _state.runtime = None
    comm_module.lifecycle.update(initialized=False, finalized=False)


# -- queries -------------------------------------------------------------------------------------


def Is_initialized() -> bool:
    """Indicate whether ``Init`` has been called."""
    return comm_module.lifecycle["initialized"]


def Is_finalized() -> bool:
    """Indicate whether ``Finalize`` has completed."""
    return comm_module.lifecycle["finalized"]


def Query_thread() -> int:
    """Return the level of thread support provided by the MPI library."""
    current_process("Query_thread")
    return _state.provided


def Is_thread_main() -> bool:
    """Indicate whether this thread called ``Init``."""
    current_process("Is_thread_main")
    return threading.current_thread() is _state.main_thread


# -- buffered sends ------------------------------------------------------------------------------


def Attach_buffer(buf: Any) -> None:
    """Attach a user-provided buffer for sending in buffered mode (None: automatic)."""
    current_process("Attach_buffer").bsend.attach(buf)


def Detach_buffer() -> Any:
    """Remove an existing attached buffer, once the buffered sends using it are done."""
    process = current_process("Detach_buffer")
    pool = process.bsend
    process.engine.wait_until(lambda: pool.pending == 0)
    return pool.detach()


def init_on_import() -> None:
    """What importing ``ompy.MPI`` does: ``Init_thread`` at ``rc.thread_level`` if wanted."""
    if not rc.initialize or comm_module.lifecycle["initialized"]:
        return
    level = THREAD_LEVELS.get(str(rc.thread_level).lower())
    if level is None:
        raise ValueError(
            f"ompy rc.thread_level = {rc.thread_level!r} is not one of {sorted(THREAD_LEVELS)}"
        )
    Init_thread(level)
