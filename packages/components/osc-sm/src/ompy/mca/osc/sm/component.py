"""The ``sm`` osc component: decides, per window, whether shared memory can serve it.

``query`` offers a module for windows whose memory MPI allocates (``Win.Allocate`` and
``Win.Allocate_shared``) when every process of the communicator runs on this node (the
run-time's node ids are equal).  Windows over the program's own memory (``Win.Create``) and
dynamic windows are left to ``pt2pt``: their memory is private to each process.  A shared
window can only be served here, so ``sm`` is the one offer for ``Allocate_shared``, and
``Allocate_shared`` over processes on several nodes fails clearly (nobody offers).

Segments are made through the shmem framework, named
``ompy-<jobid>-<random>-osc-sm-<rank>-<context id>-<serial>`` (``pid<pid>`` stands in for the
job id of a process started without a launcher), and unlinked as soon as every rank of the
window has attached (:mod:`.handshake`).
"""

from __future__ import annotations

import itertools

from ompy.ompi.mca.osc import (
    FLAVOR_ALLOCATE,
    FLAVOR_NAMES,
    FLAVOR_SHARED,
    OscComponent,
    OscModule,
    OscQuery,
)
from ompy.opal.mca import Offer
from ompy.opal.mca.shmem import Segment, SegmentDescriptor
from ompy.opal.mca.shmem import base as shmem_base
from ompy.opal.proc import Proc

from . import __version__
from .module import SmOscModule, communicator_of


class SmOscComponent(OscComponent):
    """Windows in one shared-memory segment when every process shares this node."""

    name = "sm"
    version = __version__
    description = (
        "windows allocated in shared memory when every process of the window is on one node: "
        "direct loads and stores, Win.Allocate_shared"
    )
    default_priority = 100

    def open(self) -> None:
        self._serial = itertools.count()

    def serial(self) -> int:
        """A number unique among this process's segments (part of each segment's name)."""
        return next(self._serial)

    def query(self, context: OscQuery) -> Offer[OscModule] | None:
        """Offer a module for an allocated window whose processes all run on this node."""
        flavor = FLAVOR_NAMES.get(context.flavor, str(context.flavor))
        if context.flavor not in (FLAVOR_ALLOCATE, FLAVOR_SHARED):
            self.log.debug("a window of flavor %s: its memory is the program's, not ours", flavor)
            return None
        comm = communicator_of(context.comm)
        if comm.is_inter:
            self.log.debug("windows over intercommunicators are not served")
            return None
        procs = comm.instance.procs
        members = [procs[world] for world in comm.world_ranks]
        if not all(isinstance(proc, Proc) for proc in members):
            self.log.debug("processes without a run-time identity: their node is unknown")
            return None
        nodes = {proc.node_id for proc in members}
        if len(nodes) > 1:
            self.log.debug("a window of flavor %s over %d nodes", flavor, len(nodes))
            return None
        return Offer(self.priority, SmOscModule(self))

    # -- segments (used by the module's set-up) -------------------------------------------------

    def create_segment(self, name: str, size: int) -> Segment:
        """A new segment through the process's selected shmem component."""
        segment = shmem_base.selection(self.registry).module.create(name, size)
        self.log.debug("%s: %d bytes", name, size)
        return segment

    def attach_segment(self, descriptor: SegmentDescriptor) -> Segment:
        """Map the segment another rank of the window made."""
        return shmem_base.attach(descriptor, self.registry)
