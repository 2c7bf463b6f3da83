"""Bringing the default instance up with the run-time, and taking it down again.

:func:`start` (called for the first holder: ``MPI.Init_thread`` or ``Session.Init``):

1. start the run-time (``ompy.orte.runtime.init``): identity and modex;
2. build every world rank's :class:`~ompy.opal.proc.Proc` from the job map the launcher put
   in the identity (``ompy run`` always does), and stage this process's placement (node, pid,
   local rank) and architecture (:mod:`ompy.opal.datatype.arch`: the local one, or the foreign
   byte order ``opal_arch_byteorder`` asks it to present) in the modex; without a job map,
   commit and fence first and build the procs from what every rank published (one more round
   trip through the launcher);
3. build the BTL context and the PML context, and select the PML (its selection opens the
   BTLs, which publish their contact information);
4. commit and fence, so every process sees every contact;
5. ``pml.add_procs`` (endpoints for every peer).

:func:`stop` (called when the last holder lets go): tear the frameworks down in order (coll,
op, PML), fence so that no process leaves while another still needs it, and finalize the
run-time.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from ompy.opal.threads import InternalThread

from .errors import ERR_OTHER
from .errors import Exception as MPIException
from .instance import Instance
from .proctable import ProcTable

PROC_KEY = "ompi.proc"


def start(thread_level: int) -> Instance:
    """Steps 1 to 5 of the module docstring: an instance with its PML, ready for communicators."""
    from ompy.opal.datatype.arch import MODEX_KEY as ARCH_KEY
    from ompy.opal.datatype.arch import PeerArchs, presented
    from ompy.opal.mca.base import open_framework
    from ompy.opal.mca.btl import BtlContext
    from ompy.opal.mca.params import registry as param_registry
    from ompy.opal.proc import Proc
    from ompy.opal.progress import ProgressEngine
    from ompy.orte import runtime as orte_runtime

    from .mca.pml import framework as pml_framework
    from .mca.pml.context import PmlContext

    runtime = orte_runtime.init()
    if runtime.finalized:
        raise MPIException(
            ERR_OTHER,
            "MPI was finalized in this process (the world model and every session let go of "
            "it) and cannot be initialized again",
        )
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
    registry = param_registry()
    arch = presented(registry, identity.rank)
    modex.put(ARCH_KEY, arch.encode())
    if identity.rank_nodes:
        procs = _procs_from_job_map(identity, Proc)  # published with the contacts below
    else:
        modex.commit()
        modex.fence()
        procs = _procs_from_modex(identity, modex, Proc)
    me = procs[identity.rank]
    # Indices (world ranks) for groups and the PML; universe ranks for the transports.
    proc_table = ProcTable(procs, modex)
    engine = ProgressEngine.from_params(registry, oversubscribed=identity.oversubscribed)
    secret = identity.secret if identity.secret is not None else os.urandom(32)
    btl_context = BtlContext(
        proc=me,
        modex=modex,
        secret=secret,
        progress=engine,
        local_size=identity.local_size,
        job_size=identity.size,
        # ompy run serves dynamic processes: another job of it may connect to this one.
        other_jobs=identity.server is not None,
    )
    framework = open_framework(pml_framework, registry)
    archs = PeerArchs(proc_table, rank=identity.rank, published=arch)
    context = PmlContext(
        proc=me, procs=procs, btl_context=btl_context, registry=registry, archs=archs
    )
    _component, offer = framework.select_one(context)
    pml = offer.module
    modex.commit()
    modex.fence()
    pml.add_procs(procs, range(len(procs)))
    return Instance(
        pml=pml,
        engine=engine,
        world_rank=identity.rank,
        world_size=identity.size,
        procs=tuple(procs),
        abort=runtime.abort,
        registry=registry,
        processor_name=identity.node_name,
        runtime=runtime,
        pml_framework=framework,
        thread_level=thread_level,
        archs=archs,
        proc_table=proc_table,
    )


def stop(instance: Instance) -> None:
    """Tear ``instance`` down once nothing holds it: frameworks, a fence, the run-time, progress."""
    instance.close()
    runtime = instance.runtime
    if runtime is not None:
        runtime.modex.fence()
        runtime.finalize()
    instance.engine.close()


def fence_progressing(instance: Instance) -> None:
    """A fence with the progress engine running meanwhile (as Open MPI's Init and Finalize do).

    A send may complete while its bytes still wait in a BTL queue (tcp connects lazily), and
    only progress makes them leave.  A rank blocked in a fence without progress would keep a
    peer waiting for those bytes, short of the fence, for ever: at the end of Init, the coll
    modules of COMM_WORLD have just exchanged set-up messages (coll/sm); in Finalize, the
    barrier's.  Nothing to do without a run-time (loopback instances).
    """
    runtime = instance.runtime
    if runtime is None:
        return
    engine = instance.engine
    done = threading.Event()
    failure: list[BaseException] = []

    def fence() -> None:
        try:
            runtime.modex.fence()
        except BaseException as error:  # re-raised in the calling thread
            failure.append(error)
        finally:
            done.set()
            engine.wakeup()

    thread = InternalThread(target=fence, name="ompy-init-fence", daemon=True)
    thread.start()
    engine.wait_until(done.is_set)
    thread.join()
    if failure:
        raise failure[0]


def _procs_from_job_map(identity: Any, proc_class: Any) -> list[Any]:
    """Every world rank's Proc from the job map the launcher gave (no modex round trip).

    A Proc's ``rank`` is the universe rank (the job's base plus the world rank): the name the
    transports of every job of the launcher know the process by (see :mod:`.proctable`)."""
    return [
        proc_class(
            identity.jobid,
            identity.universe_base + rank,
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
        info = modex.get(identity.universe_base + rank, PROC_KEY)
        procs.append(
            proc_class(
                identity.jobid,
                identity.universe_base + rank,
                node_id=info["node_id"],
                node_name=info["node_name"],
                local_rank=info["local_rank"],
            )
        )
    return procs
