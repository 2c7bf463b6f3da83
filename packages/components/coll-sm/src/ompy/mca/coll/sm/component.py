"""The ``sm`` coll component: decides, per communicator, whether shared memory can serve it.

``query(comm)`` offers a module when the communicator has at least two ranks, all on one node
(the run-time's node ids of its members are equal) and the process knows its job (segment
names start with ``ompy-<jobid>-`` so that the launcher can remove a crashed job's segments).
Everything else (a single rank, ranks on several nodes, an in-process test world without a job)
is left to the other components.  The module implements barrier, bcast, reduce and allreduce
only; the communicator's table takes everything else from ``tuned`` or ``basic``.

Segments are created by the communicator's rank 0 through the shmem framework, named
``ompy-<jobid>-<random>-coll-sm-<world rank>-<context id>-<serial>`` (the 64 random bits keep
other users from creating the name first; the descriptor reaches the other ranks in the
handshake), and unlinked as soon as every rank has attached (:mod:`.handshake`).
"""

from __future__ import annotations

import itertools
import secrets
from typing import Any

from ompy.ompi.mca.coll import CollComponent, CollModule
from ompy.opal import membarrier
from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamError, ParamType
from ompy.opal.mca.shmem import Segment, SegmentDescriptor
from ompy.opal.mca.shmem import base as shmem_base
from ompy.opal.membarrier import Fence

from . import __version__
from . import layout as L  # noqa: N812 (read as "the layout")
from .flags import lock_free_supported
from .module import SmCollModule


class SmCollComponent(CollComponent):
    """Barrier, bcast, reduce and allreduce in shared memory for single-node communicators."""

    name = "sm"
    version = __version__
    description = (
        "shared-memory barrier, bcast, reduce and allreduce when every rank of a communicator "
        "is on one node"
    )
    default_priority = 50

    @classmethod
    def preload(cls) -> None:
        """Register for membarrier in the fork server: ranks inherit it (cheap only there)."""
        membarrier.register()

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "fragment_size",
            ParamType.INT,
            256 * 1024,
            "Bytes of each rank's slot: larger messages move in fragments of this size, "
            f"pipelined (a multiple of {L.PAGE}; the segment of a communicator of n ranks "
            "takes n * pipeline_depth * fragment_size bytes of /dev/shm)",
            level=5,
            minimum=L.MIN_FRAGMENT,
        )
        self.register_param(
            "pipeline_depth",
            ParamType.INT,
            2,
            "Slot sets per rank: how many fragments of one message are in flight at once",
            level=6,
            minimum=2,
            maximum=64,
        )
        self.register_param(
            "split_min",
            ParamType.INT,
            16 * 1024,
            "Reductions of at least this many bytes share the combining work (each rank "
            "combines one slice of every fragment); smaller ones are combined whole by each "
            "rank that needs the result, which saves a round of synchronization",
            level=6,
            minimum=0,
        )
        self.register_param(
            "poll_count",
            ParamType.INT,
            200,
            "Checks of a flag before a waiting rank enters the progress engine (a peer of a "
            "small collective is usually microseconds away); each after a sched_yield when "
            "the node is oversubscribed, none when the flags are locked",
            level=6,
            minimum=0,
        )
        self.register_param(
            "lockfree",
            ParamType.ENUM,
            "auto",
            "Flag protocol: auto is lock-free where the processor orders memory strongly "
            "enough (x86-64), locked elsewhere; no forces a record lock around every flag",
            level=6,
            choices=("auto", "no"),
        )

    def open(self) -> None:
        self._serial = itertools.count()
        #: Shared by every module of the process (membarrier registers the process once).
        self.fence = Fence()
        fragment = self.param("fragment_size")
        if fragment % L.PAGE:
            raise ParamError(
                f"{self.param_name('fragment_size')} = {fragment} is not a multiple of "
                f"{L.PAGE} bytes; choose for example {max(L.PAGE, fragment // L.PAGE * L.PAGE)}"
            )

    def query(self, context: Any) -> Offer[CollModule] | None:
        """Offer a module if every rank of ``context`` (a communicator) shares this node."""
        comm = context
        label = f"communicator {getattr(comm, 'name', comm)!r}"
        if comm.is_inter:
            self.log.debug("%s is an intercommunicator: coll inter serves it", label)
            return None
        if comm.size < 2:
            self.log.debug("%s has a single rank: nothing to share", label)
            return None
        procs = comm.instance.procs
        members = [procs[world] for world in comm.world_ranks]
        if not all(hasattr(proc, "jobid") for proc in members):
            self.log.debug(
                "%s: no job identity, so no segment name the launcher could clean up", label
            )
            return None
        nodes = {proc.node_id for proc in members}
        if len(nodes) > 1:
            self.log.debug("%s spans %d nodes", label, len(nodes))
            return None
        lock_free = self.param("lockfree") == "auto" and lock_free_supported()
        module = SmCollModule(
            self,
            fragment=self.param("fragment_size"),
            depth=self.param("pipeline_depth"),
            split_min=self.param("split_min"),
            lock_free=lock_free,
            poll=self.param("poll_count"),
        )
        return Offer(self.priority, module)

    # -- segments (used by the module's set-up) ---------------------------------------------

    def create_segment(self, comm: Any, size: int) -> Segment:
        """A new segment for ``comm``, named so the launcher can remove it after a crash."""
        me = comm.instance.procs[comm.instance.world_rank]
        # The random part makes the name unpredictable: the job id is visible to every user
        # (/tmp, /proc), and a name another user can guess, they can create first.
        name = (
            f"ompy-{me.jobid}-{secrets.token_hex(8)}-coll-sm-{me.rank}-{comm.context_id}-"
            f"{next(self._serial)}"
        )
        segment = shmem_base.selection(self.registry).module.create(name, size)
        self.log.debug("%s: %d bytes for %d ranks of %r", name, size, comm.size, comm.name)
        return segment

    def attach_segment(self, descriptor: SegmentDescriptor) -> Segment:
        """Map the segment rank 0 of a communicator published."""
        return shmem_base.attach(descriptor, self.registry)
