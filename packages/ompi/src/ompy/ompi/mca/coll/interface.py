"""The coll framework's interfaces: what a collective component provides, per communicator.

Open MPI's coll framework, as ompy keeps it
-------------------------------------------
Every time a communicator is created, the framework asks each open coll component
``query(comm)``: a component answers ``None`` (not here: e.g. a component that only works on
``COMM_WORLD``, or only when all ranks share a node) or an :class:`~ompy.opal.mca.Offer` of its
priority and a :class:`CollModule` for *that* communicator.  The communicator's function table
then takes each operation from the highest-priority module that implements it, so a module may
implement a single operation (a hardware barrier) and leave the rest to the others; ``basic``
implements everything and is the fallback.  Modules that provide nothing in the final table are
dropped; the others get ``enable(comm)`` once the table is built and ``disable(comm)`` when the
communicator is freed.  ``--mca coll ^tuned`` keeps a component from ever being loaded,
``--mca coll_<name>_priority N`` changes its rank in the table (a negative priority takes it
out), and ``--mca coll_base_verbose 10`` prints, per communicator, who provides what.

Operations
----------
A module implements any subset of the methods below, by defining them (the base class defines
none, so "implements" means "has the attribute").  ``comm`` is the internal
:class:`~ompy.ompi.api.communicator.Communicator` (``rank``, ``size``, ``context_id``,
``world_ranks``, ``pml``, ``engine``, ``instance``, and ``coll``: the table, see
:mod:`ompy.ompi.mca.coll.base`).  Buffers arrive parsed and checked by the API layer:

- ``BufferSpec`` (:mod:`ompy.ompi.datatype.buffer`): ``view`` (flat byte memoryview of exactly
  the message), ``count``, ``datatype``, ``buffer``/``offset`` (the whole exported buffer);
  ``in_place`` is true for ``MPI.IN_PLACE`` (then the other fields are empty).
- ``VectorBufferSpec``: one block per rank, ``block(i)`` is the bytes of block ``i``.  For the
  regular operations (gather, scatter, allgather, alltoall) the API builds a regular one:
  every count equal, ``displs[i] == i * count``.
- ``op`` is an ``MPI.Op`` handle: ``kernel(op, datatype)`` from :mod:`ompy.ompi.mca.op.base`
  gives ``run(inmem, inoutmem, count)`` computing ``inoutmem = inmem op inoutmem``; for a
  non-commutative op (``op.Is_commutative()`` false) ``inmem`` must hold the contribution of
  the *lower* ranks.
- Roots are valid ranks, op/datatype pairs are allowed, counts agree: the API checked them.

Blocking forms (return ``None``; every signature is typed once in :data:`SIGNATURES`)::

    barrier(comm)
    bcast(comm, spec, root)
    gather(comm, sendspec, recvspec, root)        recvspec: regular VectorBufferSpec at root,
    gatherv(comm, sendspec, recvspec, root)         None elsewhere; sendspec.in_place at root
                                                    means "my block is already in recvspec"
    scatter(comm, sendspec, recvspec, root)       sendspec: VectorBufferSpec at root, None
    scatterv(comm, sendspec, recvspec, root)        elsewhere; recvspec.in_place at root means
                                                    "leave my block where it is"
    allgather(comm, sendspec, recvspec)           recvspec: VectorBufferSpec; sendspec.in_place:
    allgatherv(comm, sendspec, recvspec)            my block is already in recvspec.block(rank)
    alltoall(comm, sendspec, recvspec)            both VectorBufferSpec; sendspec.in_place:
    alltoallv(comm, sendspec, recvspec)             the data to send is in recvspec, replaced
    alltoallw(comm, sendspecs, recvspecs)         tuples of one BufferSpec per peer; sendspecs
                                                    is None for MPI.IN_PLACE
    reduce(comm, sendspec, recvspec, op, root)    recvspec None except at root; sendspec.in_place
                                                    at root: the input is in recvspec
    allreduce(comm, sendspec, recvspec, op)       sendspec.in_place: the input is in recvspec
    reduce_scatter_block(comm, sendspec, recvspec, op)
                                                  sendspec holds size * recvspec.count elements;
                                                  in place: recvspec.buffer from recvspec.offset
                                                  holds them, the result goes to recvspec.view
    reduce_scatter(comm, sendspec, recvspec, recvcounts, op)
                                                  recvcounts: tuple, one per rank; in place as
                                                  above with sum(recvcounts) elements
    scan(comm, sendspec, recvspec, op)            sendspec.in_place: the input is in recvspec
    exscan(comm, sendspec, recvspec, op)          recvspec of rank 0 is left untouched

Object forms (the lowercase ``comm.bcast(obj)``, ...; return the object, or None where MPI
gives nothing)::

    bcast_object(comm, obj, root)                 -> the root's object, on every member
    gather_object(comm, obj, root)                -> list in rank order at root, None elsewhere
    scatter_object(comm, items, root)             items: sequence of size objects at root, None
                                                    elsewhere -> item rank
    allgather_object(comm, obj)                   -> list in rank order
    alltoall_object(comm, items)                  items: one per rank -> one from each rank
    reduce_object(comm, obj, op, root)            op: function of two objects -> result at root
    allreduce_object(comm, obj, op)               -> x0 op x1 op ... op xp-1 on every member
    scan_object(comm, obj, op)                    -> x0 op ... op x_rank
    exscan_object(comm, obj, op)                  -> x0 op ... op x_rank-1 (None on rank 0)

Objects travel through the instance's codec (``comm.instance.codec``, ``MPI.pickle``) with
:func:`ompy.ompi.mca.coll.base.send_object` and :func:`~ompy.ompi.mca.coll.base.recv_object`.
Reductions must keep rank order (``op`` is associative, not necessarily commutative); every
member gets its own object, the root included (never the caller's object itself).  The
signatures are typed once, below (:data:`SIGNATURES`).

The ``items`` of ``scatter_object``, ``alltoall_object`` and ``neighbor_alltoall_object`` may
be the error the API's check of the caller's sequence raised (:data:`Items`: not a sequence,
or not one object per peer): the peers are already waiting in the collective, so the module
plays this member's part with a failure in place of every item (the peers raise naming this
rank) and raises that error itself once its part is done
(:meth:`ompy.ompi.mca.coll.base.Outcome.items`).

Nonblocking forms: the same name with an ``i`` in front and the same arguments
(``ibarrier(comm)``, ``iallreduce(comm, sendspec, recvspec, op)``, ...); they start the
operation and return a :class:`~ompy.ompi.completion.CoreRequest` that completes through the
progress engine, without the caller blocking.  The simplest way to write one is a schedule
(:func:`ompy.ompi.mca.coll.base.start_schedule`): a generator that yields rounds of requests.

Persistent forms (MPI-4): the same name with ``_init`` after it and the same arguments
(``barrier_init(comm)``, ``allreduce_init(comm, sendspec, recvspec, op)``, ...); they set the
operation up once and return a :class:`PersistentCollective` whose ``start()`` runs it again
(the API's ``Prequest.Start``); see :mod:`ompy.ompi.mca.coll.base.persistent`, which builds
one from a plan recorded at init.  A module that cannot run an operation without per-call
set-up, or only blocking (``sm``), leaves its persistent form to others.

A blocking operation that no module implements is served by waiting on the best nonblocking
one, so a component may implement nonblocking forms only.  The converse is not true: a module
that implements only blocking forms leaves the nonblocking ones to others.

Intercommunicators
------------------
An intercommunicator (``comm.is_inter``) joins two disjoint groups; only components written
for it serve it (``ompy-coll-inter``), every other component declines it in ``query``.  Its
operations have the names and signatures above with MPI's intercommunicator meaning:
``comm.rank``/``comm.size`` are the local group's, ``comm.remote_size`` the remote group's,
point-to-point on ``comm`` addresses the remote group, and ``comm.local_comm`` is a private
intracommunicator over the local group (no coll table of its own: point to point only), on
which a module may use the tag of the call on ``comm``.  Roots are ``ROOT`` (the root),
``PROC_NULL`` (the other members of the root's group: they take part in nothing but the call)
or the root's rank in the remote group; an argument a process does not use is None there:

- ``bcast``: the root's ``spec`` goes to every process of the other group;
- ``gather(v)``: at ``ROOT`` the receive blocks (one per remote rank, ``sendspec`` None); in
  the other group ``sendspec`` (``recvspec`` None); ``scatter(v)`` the other way round;
- ``allgather(v)``: each process receives one block from each remote rank;
- ``alltoall(v/w)``: block ``i`` to remote rank ``i``, block ``j`` from remote rank ``j``;
- ``reduce``: the reduction of the other group's ``sendspec`` lands in the root's
  ``recvspec``; ``allreduce``: each group receives the reduction of the other group's data;
- ``reduce_scatter(_block)``: the reduction of one group's ``sendspec`` (``sum(recvcounts)``,
  or ``size * recvspec.count``, elements, the same total in both groups) is scattered over the
  other group by its ``recvcounts``;
- ``IN_PLACE`` never occurs; ``scan``/``exscan`` and their object forms are not defined;
- object forms: ``bcast_object``/``scatter_object`` return None at the root's group,
  ``gather_object``/``reduce_object`` give the result at ``ROOT`` only, ``allgather_object`` and
  ``alltoall_object`` lists over the remote group, ``allreduce_object`` the other group's
  reduction.

Tags and ordering
-----------------
MPI requires the members of a communicator to call its collectives in the same order, and
nonblocking collectives may be in flight together.  Point-to-point traffic of collectives uses
the tags -2..-99 (``ANY_TAG`` never matches a negative tag, so user receives never see it);
``ompy.ompi.mca.coll.base.next_tag(comm)`` gives each collective call on a communicator its own
tag, the same on every member, and makes sure no two calls in flight share one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from ompy.opal.mca import Component, Offer

from ..pml.interface import PmlComm

if TYPE_CHECKING:
    from ompy.opal.progress import ProgressEngine

    from ...completion import CoreRequest
    from ...datatype.buffer import BufferSpec, VectorBufferSpec
    from ...instance import Instance
    from ...op import Op
    from ..pml.interface import PmlModule
    from ..topo import Topology
    from .base.table import CollTable

#: The version of this interface; components declare the version they were written against.
INTERFACE_VERSION = (1, 0)

# -- neighbor collectives (issue 15): on a communicator with a topology ------------------------
#: The blocking neighbor collectives (each with its ``i`` twin, like the others).  Block ``i`` of
#: the send side goes to ``comm.topo.destinations[i]``, block ``j`` of the receive side comes
#: from ``comm.topo.sources[j]`` (:func:`~ompy.ompi.mca.coll.base.neighborhood` gives both and
#: the order MPI matches duplicate edges in); ``PROC_NULL`` entries move nothing::
#:
#:     neighbor_allgather(comm, sendspec, recvspec)    recvspec: VectorBufferSpec of indegree
#:     neighbor_allgatherv(comm, sendspec, recvspec)     blocks (no MPI.IN_PLACE here)
#:     neighbor_alltoall(comm, sendspec, recvspec)     sendspec: outdegree blocks, recvspec:
#:     neighbor_alltoallv(comm, sendspec, recvspec)      indegree blocks (VectorBufferSpec)
#:     neighbor_alltoallw(comm, sendspecs, recvspecs)  tuples of one BufferSpec per edge
NEIGHBOR_BLOCKING: Final[tuple[str, ...]] = (
    "neighbor_allgather",
    "neighbor_allgatherv",
    "neighbor_alltoall",
    "neighbor_alltoallv",
    "neighbor_alltoallw",
)
#: The object forms (``comm.neighbor_allgather(obj)``, ``comm.neighbor_alltoall(items)``)::
#:
#:     neighbor_allgather_object(comm, obj)     -> one object per source (None for PROC_NULL)
#:     neighbor_alltoall_object(comm, items)    items: one per destination -> one per source
NEIGHBOR_OBJECT_OPERATIONS: Final[tuple[str, ...]] = (
    "neighbor_allgather_object",
    "neighbor_alltoall_object",
)

#: The blocking operations, in MPI's order; each has a nonblocking twin named ``"i" + name``.
BLOCKING: Final[tuple[str, ...]] = (
    "barrier",
    "bcast",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "allgather",
    "allgatherv",
    "alltoall",
    "alltoallv",
    "alltoallw",
    "reduce",
    "allreduce",
    "reduce_scatter_block",
    "reduce_scatter",
    "scan",
    "exscan",
    *NEIGHBOR_BLOCKING,
)
#: The nonblocking operations: ``ibarrier``, ``ibcast``, ...
NONBLOCKING: Final[tuple[str, ...]] = tuple(f"i{name}" for name in BLOCKING)
#: The operations on Python objects (the lowercase collectives), blocking only.
OBJECT_OPERATIONS: Final[tuple[str, ...]] = (
    "bcast_object",
    "gather_object",
    "scatter_object",
    "allgather_object",
    "alltoall_object",
    "reduce_object",
    "allreduce_object",
    "scan_object",
    "exscan_object",
    *NEIGHBOR_OBJECT_OPERATIONS,
)
# -- persistent collectives (MPI-4; issue 15) ------------------------------------------------
#: The persistent operations: ``barrier_init``, ``bcast_init``, ... (same arguments as the
#: blocking form; they return a :class:`PersistentCollective`).
PERSISTENT: Final[tuple[str, ...]] = tuple(f"{name}_init" for name in BLOCKING)
# -- end of persistent collectives ------------------------------------------------------------

#: Every operation a module may implement.
OPERATIONS: Final[tuple[str, ...]] = BLOCKING + NONBLOCKING + OBJECT_OPERATIONS + PERSISTENT

# -- the signature of every operation, as a module implements it and the table holds it ----------
# (``comm`` first; a nonblocking operation returns the request the API wraps).

Barrier = Callable[["CollComm"], None]
Ibarrier = Callable[["CollComm"], "CoreRequest"]
Bcast = Callable[["CollComm", "BufferSpec", int], None]
Ibcast = Callable[["CollComm", "BufferSpec", int], "CoreRequest"]
#: gather and gatherv: the receive blocks at the root, None elsewhere.
Gather = Callable[["CollComm", "BufferSpec", "VectorBufferSpec | None", int], None]
Igather = Callable[["CollComm", "BufferSpec", "VectorBufferSpec | None", int], "CoreRequest"]
#: scatter and scatterv: the send blocks at the root, None elsewhere.
Scatter = Callable[["CollComm", "VectorBufferSpec | None", "BufferSpec", int], None]
Iscatter = Callable[["CollComm", "VectorBufferSpec | None", "BufferSpec", int], "CoreRequest"]
#: allgather and allgatherv.
Allgather = Callable[["CollComm", "BufferSpec", "VectorBufferSpec"], None]
Iallgather = Callable[["CollComm", "BufferSpec", "VectorBufferSpec"], "CoreRequest"]
#: alltoall and alltoallv.
Alltoall = Callable[["CollComm", "VectorBufferSpec", "VectorBufferSpec"], None]
Ialltoall = Callable[["CollComm", "VectorBufferSpec", "VectorBufferSpec"], "CoreRequest"]
Alltoallw = Callable[["CollComm", "tuple[BufferSpec, ...] | None", "tuple[BufferSpec, ...]"], None]
Ialltoallw = Callable[
    ["CollComm", "tuple[BufferSpec, ...] | None", "tuple[BufferSpec, ...]"], "CoreRequest"
]
Reduce = Callable[["CollComm", "BufferSpec", "BufferSpec | None", "Op", int], None]
Ireduce = Callable[["CollComm", "BufferSpec", "BufferSpec | None", "Op", int], "CoreRequest"]
#: allreduce, reduce_scatter_block, scan and exscan.
Allreduce = Callable[["CollComm", "BufferSpec", "BufferSpec", "Op"], None]
Iallreduce = Callable[["CollComm", "BufferSpec", "BufferSpec", "Op"], "CoreRequest"]
ReduceScatter = Callable[["CollComm", "BufferSpec", "BufferSpec", "tuple[int, ...]", "Op"], None]
IreduceScatter = Callable[
    ["CollComm", "BufferSpec", "BufferSpec", "tuple[int, ...]", "Op"], "CoreRequest"
]

#: How the object reductions combine two objects: ``op(lower ranks, higher ranks)``.
Combine = Callable[[Any, Any], Any]
#: The signature of each object operation, as the table holds it (``comm`` first).
BcastObject = Callable[["CollComm", Any, int], Any]
GatherObject = Callable[["CollComm", Any, int], "list[Any] | None"]
#: What a member gives to send one object per peer: its sequence, or the error that the check
#: of the caller's sequence raised (the module tells the peers, then raises it).
Items = Sequence[Any] | Exception
ScatterObject = Callable[["CollComm", "Items | None", int], Any]
AllgatherObject = Callable[["CollComm", Any], "list[Any]"]
AlltoallObject = Callable[["CollComm", "Items"], "list[Any]"]
ReduceObject = Callable[["CollComm", Any, Combine, int], Any]
AllreduceObject = Callable[["CollComm", Any, Combine], Any]
ScanObject = Callable[["CollComm", Any, Combine], Any]
# -- persistent collectives (MPI-4; issue 15): ``<op>_init`` takes the blocking form's arguments


class PersistentCollective(Protocol):
    """A persistent collective of one communicator, set up once by a module's ``<op>_init``.

    ``start()`` runs the operation once more and returns the request of that run (the API
    wraps it as the ``Prequest``'s active operation); it is only called when the previous run
    completed and was reported.  ``free()`` releases what the init took (its tag, scratch
    space), once, when the inactive request is freed.  Everything that does not depend on the
    data (algorithm, peers, tag, scratch buffers, reduction kernel) is decided at init, so a
    start does no set-up (:mod:`ompy.ompi.mca.coll.base.persistent` writes one as a plan).
    """

    def start(self) -> CoreRequest: ...
    def free(self) -> None: ...


BarrierInit = Callable[["CollComm"], PersistentCollective]
BcastInit = Callable[["CollComm", "BufferSpec", int], PersistentCollective]
GatherInit = Callable[
    ["CollComm", "BufferSpec", "VectorBufferSpec | None", int], PersistentCollective
]
ScatterInit = Callable[
    ["CollComm", "VectorBufferSpec | None", "BufferSpec", int], PersistentCollective
]
AllgatherInit = Callable[["CollComm", "BufferSpec", "VectorBufferSpec"], PersistentCollective]
AlltoallInit = Callable[["CollComm", "VectorBufferSpec", "VectorBufferSpec"], PersistentCollective]
AlltoallwInit = Callable[
    ["CollComm", "tuple[BufferSpec, ...] | None", "tuple[BufferSpec, ...]"], PersistentCollective
]
ReduceInit = Callable[
    ["CollComm", "BufferSpec", "BufferSpec | None", "Op", int], PersistentCollective
]
AllreduceInit = Callable[["CollComm", "BufferSpec", "BufferSpec", "Op"], PersistentCollective]
ReduceScatterInit = Callable[
    ["CollComm", "BufferSpec", "BufferSpec", "tuple[int, ...]", "Op"], PersistentCollective
]
#: Persistent operation name -> its signature.
PERSISTENT_SIGNATURES: Final[dict[str, Any]] = {
    "barrier_init": BarrierInit,
    "bcast_init": BcastInit,
    "gather_init": GatherInit,
    "gatherv_init": GatherInit,
    "scatter_init": ScatterInit,
    "scatterv_init": ScatterInit,
    "allgather_init": AllgatherInit,
    "allgatherv_init": AllgatherInit,
    "alltoall_init": AlltoallInit,
    "alltoallv_init": AlltoallInit,
    "alltoallw_init": AlltoallwInit,
    "reduce_init": ReduceInit,
    "allreduce_init": AllreduceInit,
    "reduce_scatter_block_init": AllreduceInit,
    "reduce_scatter_init": ReduceScatterInit,
    "scan_init": AllreduceInit,
    "exscan_init": AllreduceInit,
    "neighbor_allgather_init": AllgatherInit,
    "neighbor_allgatherv_init": AllgatherInit,
    "neighbor_alltoall_init": AlltoallInit,
    "neighbor_alltoallv_init": AlltoallInit,
    "neighbor_alltoallw_init": AlltoallwInit,
}
# -- end of persistent collectives ------------------------------------------------------------

#: Operation name -> its signature (what :class:`~.base.table.CollTable` declares).
SIGNATURES: Final[dict[str, Any]] = {
    "barrier": Barrier,
    "bcast": Bcast,
    "gather": Gather,
    "gatherv": Gather,
    "scatter": Scatter,
    "scatterv": Scatter,
    "allgather": Allgather,
    "allgatherv": Allgather,
    "alltoall": Alltoall,
    "alltoallv": Alltoall,
    "alltoallw": Alltoallw,
    "reduce": Reduce,
    "allreduce": Allreduce,
    "reduce_scatter_block": Allreduce,
    "reduce_scatter": ReduceScatter,
    "scan": Allreduce,
    "exscan": Allreduce,
    "ibarrier": Ibarrier,
    "ibcast": Ibcast,
    "igather": Igather,
    "igatherv": Igather,
    "iscatter": Iscatter,
    "iscatterv": Iscatter,
    "iallgather": Iallgather,
    "iallgatherv": Iallgather,
    "ialltoall": Ialltoall,
    "ialltoallv": Ialltoall,
    "ialltoallw": Ialltoallw,
    "ireduce": Ireduce,
    "iallreduce": Iallreduce,
    "ireduce_scatter_block": Iallreduce,
    "ireduce_scatter": IreduceScatter,
    "iscan": Iallreduce,
    "iexscan": Iallreduce,
    "bcast_object": BcastObject,
    "gather_object": GatherObject,
    "scatter_object": ScatterObject,
    "allgather_object": AllgatherObject,
    "alltoall_object": AlltoallObject,
    "reduce_object": ReduceObject,
    "allreduce_object": AllreduceObject,
    "scan_object": ScanObject,
    "exscan_object": ScanObject,
    # neighbor collectives: the shapes of their all-member twins, with per-edge blocks
    "neighbor_allgather": Allgather,
    "neighbor_allgatherv": Allgather,
    "neighbor_alltoall": Alltoall,
    "neighbor_alltoallv": Alltoall,
    "neighbor_alltoallw": Alltoallw,
    "ineighbor_allgather": Iallgather,
    "ineighbor_allgatherv": Iallgather,
    "ineighbor_alltoall": Ialltoall,
    "ineighbor_alltoallv": Ialltoall,
    "ineighbor_alltoallw": Ialltoallw,
    "neighbor_allgather_object": AllgatherObject,
    "neighbor_alltoall_object": AlltoallObject,
    **PERSISTENT_SIGNATURES,
}


class CollComm(PmlComm, Protocol):
    """What a coll module sees of a communicator (the API's ``Communicator`` has this shape).

    It is the PML's communicator (modules hand it to the PML) with what collectives add.

    ``coll`` is the communicator's table (every operation refuses until selection built it),
    ``instance``
    the process instance (its op framework gives the reduction kernels), ``topo`` the process
    topology the neighbor collectives follow (:mod:`ompy.ompi.mca.topo`).
    """

    @property
    def name(self) -> str: ...
    @property
    def pml(self) -> PmlModule: ...
    @property
    def engine(self) -> ProgressEngine: ...
    @property
    def instance(self) -> Instance: ...
    @property
    def coll(self) -> CollTable: ...
    @property
    def topo(self) -> Topology | None:
        """The process topology (neighbor collectives): None for a communicator without one."""
        ...

    @property
    def is_inter(self) -> bool: ...


class InterCollComm(CollComm, Protocol):
    """What a coll module sees of an intercommunicator (see "Intercommunicators" above)."""

    @property
    def remote_size(self) -> int: ...
    @property
    def local_comm(self) -> CollComm | None: ...


class CollModule:
    """What a coll component runs on one communicator: some of the operations above.

    Subclasses define the operations they implement as methods (see the module docstring for
    their signatures) and may override :meth:`enable` and :meth:`disable`.  A module belongs to
    one communicator; it may keep per-communicator state (precomputed peers, scratch buffers,
    shared-memory segments) created in ``enable`` and released in ``disable``.
    """

    def enable(self, comm: Any) -> None:
        """The table is built and this module serves some of its operations: set up state.

        Called once per communicator, after selection and before any collective runs on it.
        Raising here is an error of communicator creation (it names the component).
        """

    def disable(self, comm: Any) -> None:
        """The communicator is being freed: release what ``enable`` acquired."""

    def implements(self, operation: str) -> bool:
        """Whether this module provides ``operation`` (by default: it has such a method)."""
        return callable(getattr(self, operation, None))


class CollComponent(Component[CollComm, CollModule]):
    """Base class of coll components: ``query(comm)`` offers a :class:`CollModule` or ``None``.

    The offer's priority should normally be :attr:`priority` (the user's
    ``coll_<name>_priority`` or :attr:`default_priority`), so the user can reorder components.
    """

    framework: ClassVar[str] = "coll"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: CollComm) -> Offer[CollModule] | None:
        """Offer a module for the communicator ``context``, or ``None`` to stay out of it."""
        return None
