"""Persistent collectives (MPI-4): a plan built once at init, replayed by every start.

``Allreduce_init`` and its kin promise that the work of setting a collective up is done once
and each ``Start`` only moves data.  A coll module's ``<op>_init`` therefore does everything
that does not depend on the data at init: it decides the algorithm, computes the peers of
every round, allocates the scratch space, looks the reduction kernel up, binds every transfer
to its buffer, peer and tag, and returns a :class:`PlanCollective`.  Each start then walks the
:class:`Plan`: a tuple of :class:`Phase`, each a few local steps (copies, reductions: prebound
callables) followed by the transfers to post; a phase's transfers must all complete before the
next phase's local steps run, exactly as a schedule's rounds (:mod:`.schedule`) -- Open MPI's
libnbc keeps its persistent schedules the same way, as rows of send/recv/op/copy steps.

Algorithms are written against a :class:`PlanBuilder` in the shape of a schedule::

    def linear_bcast(b: PlanBuilder, view: memoryview, root: int) -> None:
        if b.rank == root:
            for peer in others: b.send(view, peer)
        else:
            b.recv(view, root)
        b.wait()                         # the end of a round
        ...                              # b.copy / b.combine run after it completed

Tags and ordering
-----------------
A persistent collective is matched when it is *initialized*: MPI requires the members to call
the ``_init`` functions of a communicator in the same order (as any collective), but lets them
start the requests in any order (``Startall`` starts its list in an arbitrary order).  So each
persistent request takes its own tag at init, from a range of its own (:data:`FIRST_TAG` down,
:data:`TAGS` of them), counted per communicator by the init calls; its starts use that tag
only.  Two starts of one request never overlap (a request must complete before it is started
again), and MPI's non-overtaking rule keeps the messages of consecutive starts in order, as
for blocking calls that share a tag (:mod:`.tags`).  The tags of the ordinary collectives
(-2..-99) are never used, so persistent and ordinary collectives mix freely.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

import attrs

from ....completion import CoreRequest
from ....errors import ERR_INTERN, ERR_OTHER
from ....errors import Exception as MPIException
from ...pml.interface import SendMode
from .schedule import track

#: The first tag of persistent collectives (their range runs down from it).
FIRST_TAG: Final = -(1 << 18)
#: How many persistent collective tags there are per communicator (reused modulo this number).
TAGS: Final = 1 << 18

_STANDARD = SendMode.STANDARD
#: A local step of a plan: a prebound copy or reduction.
Step = Callable[[], object]
#: Starts one transfer of a plan: returns the PML's request.
Post = Callable[[], Any]


@attrs.frozen
class Phase:
    """Local steps, then the transfers of one round (all complete before the next phase)."""

    local: tuple[Step, ...]
    posts: tuple[Post, ...]


@attrs.frozen
class Plan:
    """What every start of a persistent collective does: its phases, then the last steps."""

    phases: tuple[Phase, ...]
    final: tuple[Step, ...]

    @property
    def transfers(self) -> int:
        """How many transfers one start posts."""
        return sum(len(phase.posts) for phase in self.phases)


class PersistentTags:
    """The persistent collective tags of one communicator (kept on its coll table).

    ``claim`` is called by every member for the same init call (inits are collective and
    ordered), so the counter, hence the tag, is the same on every member.  A tag comes back
    to use only after :data:`TAGS` more inits; if its earlier owner is still alive then, the
    init fails rather than risk mixing the two requests' messages.
    """

    __slots__ = ("live", "reserved", "sequence")

    def __init__(self) -> None:
        self.sequence = 0
        self.live: set[int] = set()
        #: The tag drawn by :meth:`reserve` for the init call in progress, if any.
        self.reserved: int | None = None

    def reserve(self) -> None:
        """Draw the tag of an init call as it begins, before its arguments are checked.

        Every member draws once per init call, even one whose arguments turn out bad on this
        member only (a root's buffer, say): the counters of the members stay equal, so the
        next init gets the same tag everywhere.  :meth:`claim` then takes the reserved tag.
        """
        self.reserved = FIRST_TAG - self.sequence % TAGS
        self.sequence += 1

    def claim(self, comm_name: str) -> int:
        """The tag of the persistent collective being initialized now (reserved, or drawn)."""
        tag = self.reserved
        if tag is None:
            tag = FIRST_TAG - self.sequence % TAGS
            self.sequence += 1
        self.reserved = None
        if tag in self.live:
            raise MPIException(
                ERR_INTERN,
                f"{TAGS} persistent collectives of {comm_name!r} are alive at once (the tag "
                f"{tag} is still in use); free the ones no longer needed (Prequest.Free)",
            )
        self.live.add(tag)
        return tag

    def release(self, tag: int) -> None:
        """The request owning ``tag`` was freed."""
        self.live.discard(tag)


class PlanBuilder:
    """Records the steps of one persistent collective at init (see the module docstring).

    Every transfer is bound to its view, peer and the request's tag; every reduction to its
    kernel; scratch space is allocated here, once.  ``rank`` and ``size`` are the
    communicator's.
    """

    __slots__ = ("_local", "_phases", "_posts", "comm", "rank", "size", "tag")

    def __init__(self, comm: Any, tag: int) -> None:
        self.comm = comm
        self.tag = tag
        self.rank: int = comm.rank
        self.size: int = comm.size
        self._phases: list[Phase] = []
        self._local: list[Step] = []
        self._posts: list[Post] = []

    # -- transfers ------------------------------------------------------------------------------

    def send(self, view: memoryview, peer: int, over: Any = None) -> None:
        """Send the bytes of ``view`` to ``peer`` in the current round.

        ``over`` is the communicator to post on when it is not the builder's own: an
        intercommunicator's algorithms also talk within their group, on its ``local_comm``,
        with the request's tag (nothing else uses that communicator's negative tags).
        """
        comm = self.comm if over is None else over
        self._posts.append(
            functools.partial(comm.pml.isend_view, view, peer, self.tag, comm, _STANDARD)
        )

    def recv(self, view: memoryview, peer: int, over: Any = None) -> None:
        """Receive into ``view`` from ``peer`` in the current round (``over``: as in
        :meth:`send`)."""
        comm = self.comm if over is None else over
        self._posts.append(functools.partial(comm.pml.irecv_view, view, peer, self.tag, comm))

    def wait(self) -> None:
        """End the current round: what follows runs once its transfers completed."""
        if self._posts:
            self._phases.append(Phase(tuple(self._local), tuple(self._posts)))
            self._local, self._posts = [], []

    # -- local steps ----------------------------------------------------------------------------

    def _step(self, step: Step) -> None:
        if self._posts:
            raise RuntimeError(
                "a persistent collective's plan has a local step after transfers of the same "
                "round; call wait() first (a local step may not race the transfers)"
            )
        self._local.append(step)

    def copy(self, target: memoryview, source: memoryview) -> None:
        """Copy ``source`` into ``target`` (same length; nothing when they are the same)."""
        if target.nbytes and target is not source:
            self._step(functools.partial(target.__setitem__, slice(None), source))

    def combine(
        self, op: Any, datatype: Any, inmem: memoryview, inoutmem: memoryview, count: int
    ) -> None:
        """``inoutmem = inmem op inoutmem`` on ``count`` elements (``inmem``: the lower ranks).

        The kernel is looked up now, once.
        """
        if count:
            kernel = self.comm.instance.op.kernel(op, datatype)
            self._step(functools.partial(kernel, inmem, inoutmem, count))

    def scratch(self, nbytes: int) -> memoryview:
        """A writable byte view of ``nbytes`` bytes, allocated once for every start."""
        return memoryview(bytearray(nbytes))

    # -- result ---------------------------------------------------------------------------------

    def build(self) -> Plan:
        """The plan recorded so far (an open round is closed)."""
        self.wait()
        plan = Plan(tuple(self._phases), tuple(self._local))
        self._phases, self._local = [], []
        return plan


class PlanRun(CoreRequest):
    """One start of a persistent collective: its plan walked phase by phase by progress."""

    __slots__ = ("_index", "_pending", "_phases", "final")

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self._phases = plan.phases
        self.final = plan.final
        self._index = 0
        self._pending: list[Any] = []

    def advance(self) -> bool:
        """Start every phase whose predecessor completed; whether anything moved."""
        if self.complete:
            return False
        moved = False
        phases = self._phases
        while True:
            pending = self._pending
            for request in pending:
                if not request.complete:
                    return moved
            for request in pending:
                if request.exception is not None:
                    self._pending = []
                    self.fail(request.error or _error_class(request.exception), request.exception)
                    return True
            moved = True
            index = self._index
            try:
                if index == len(phases):
                    self._pending = []
                    for step in self.final:
                        step()
                    self.finish()
                    return True
                phase = phases[index]
                self._index = index + 1
                for step in phase.local:
                    step()
                self._pending = [post() for post in phase.posts]
            except Exception as error:  # a local step failed: the start fails with it
                self._pending = []
                self.fail(_error_class(error), error)
                return True


def _error_class(error: BaseException) -> int:
    return error.error_class if isinstance(error, MPIException) else ERR_OTHER


class PlanCollective:
    """A persistent collective of one communicator: its plan and tag (``PersistentCollective``).

    ``start`` posts the first round at once; the rest follow from the progress engine.
    ``starts`` counts the starts (tests and tools read it); ``free`` gives the tag back.
    """

    __slots__ = ("comm", "plan", "starts", "tag")

    def __init__(self, comm: Any, tag: int, plan: Plan) -> None:
        self.comm = comm
        self.tag = tag
        self.plan = plan
        self.starts = 0

    def start(self) -> CoreRequest:
        """Run the plan once; the request of this start."""
        comm = self.comm
        self.starts += 1
        run = PlanRun(self.plan)
        engine = comm.engine
        with engine.lock:  # THREAD_MULTIPLE: the runner's list may be in use by progress
            run.advance()
            if not run.complete:
                track(engine, run)
        return run

    def free(self) -> None:
        """The request is freed (inactive): its tag may be used again."""
        self.comm.coll.persistent.release(self.tag)

    def __repr__(self) -> str:
        return (
            f"<PlanCollective tag={self.tag} {len(self.plan.phases)} rounds, "
            f"{self.plan.transfers} transfers per start, started {self.starts} times>"
        )


def plan_collective(comm: Any, algorithm: Callable[..., None], *args: Any) -> PlanCollective:
    """Initialize a persistent collective: claim its tag, record ``algorithm(builder, *args)``.

    What a coll module's ``<op>_init`` returns (see :mod:`ompy.ompi.mca.coll.interface`).
    """
    tag = comm.coll.persistent.claim(comm.name)
    try:
        builder = PlanBuilder(comm, tag)
        algorithm(builder, *args)
        return PlanCollective(comm, tag, builder.build())
    except BaseException:
        comm.coll.persistent.release(tag)
        raise
