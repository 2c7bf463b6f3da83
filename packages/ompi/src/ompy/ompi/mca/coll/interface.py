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

Blocking forms (return ``None``)::

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

Nonblocking forms: the same name with an ``i`` in front and the same arguments
(``ibarrier(comm)``, ``iallreduce(comm, sendspec, recvspec, op)``, ...); they start the
operation and return a :class:`~ompy.ompi.completion.CoreRequest` that completes through the
progress engine, without the caller blocking.  The simplest way to write one is a schedule
(:func:`ompy.ompi.mca.coll.base.start_schedule`): a generator that yields rounds of requests.

A blocking operation that no module implements is served by waiting on the best nonblocking
one, so a component may implement nonblocking forms only.  The converse is not true: a module
that implements only blocking forms leaves the nonblocking ones to others.

Tags and ordering
-----------------
MPI requires the members of a communicator to call its collectives in the same order, and
nonblocking collectives may be in flight together.  Point-to-point traffic of collectives uses
the tags -2..-99 (``ANY_TAG`` never matches a negative tag, so user receives never see it);
``ompy.ompi.mca.coll.base.next_tag(comm)`` gives each collective call on a communicator its own
tag, the same on every member, and makes sure no two calls in flight share one.
"""

from __future__ import annotations

from typing import Any, ClassVar, Final

from ompy.opal.mca import Component, Offer

#: The version of this interface; components declare the version they were written against.
INTERFACE_VERSION = (1, 0)

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
)
#: The nonblocking operations: ``ibarrier``, ``ibcast``, ...
NONBLOCKING: Final[tuple[str, ...]] = tuple(f"i{name}" for name in BLOCKING)
#: Every operation a module may implement.
OPERATIONS: Final[tuple[str, ...]] = BLOCKING + NONBLOCKING


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


class CollComponent(Component):
    """Base class of coll components: ``query(comm)`` offers a :class:`CollModule` or ``None``.

    The offer's priority should normally be :attr:`priority` (the user's
    ``coll_<name>_priority`` or :attr:`default_priority`), so the user can reorder components.
    """

    framework: ClassVar[str] = "coll"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: Any) -> Offer[CollModule] | None:
        """Offer a module for the communicator ``context``, or ``None`` to stay out of it."""
        return None
