"""The osc framework's contracts: what a one-sided communication component provides.

Open MPI selects an osc component for every window (``ompi_osc_base_select``): the window's
communicator, its flavor (memory given by the program, allocated by MPI, shared, dynamic) and
info hints decide which components can serve it, and the best offer becomes the window's
module.  ompy does the same: :class:`OscComponent` is queried with an :class:`OscQuery` and
offers an :class:`OscModule` made for that one window; the API's ``MPI.Win`` then calls the
module's :meth:`OscModule.setup` collectively and routes every RMA and synchronisation call to
it.

What the API layer has already done before it calls a module (so modules never repeat it):
origin, result and compare buffers are parsed into buffer specs, ``PROC_NULL`` targets are
answered without calling the module, ranks are checked against the window's group, counts are
non-negative, datatypes committed, and the epoch rules a program can break by itself (an RMA
call outside any access epoch, ``Complete`` without ``Start``, ``Unlock`` of a target that is
not locked) raise ``MPI.Exception`` with ``ERR_RMA_SYNC`` before the module is asked.

What a module promises:

- an RMA call returns once the origin buffer may be reused (its data is copied or sent); the
  request it returns completes at *remote* completion for ``Put``/``Accumulate`` and when the
  result buffer is filled for the fetching calls (stronger than MPI's local completion, which
  is allowed);
- accumulate operations (``Accumulate``, ``Get_accumulate``, ``Fetch_and_op``,
  ``Compare_and_swap``) are atomic per element with respect to every other accumulate on the
  same window location, whichever origin issued them;
- the synchronisation calls have MPI's meaning for completion and visibility; a module may
  be stricter (``Flush_local`` waiting for remote completion) but never weaker.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from ompy.opal.mca import Component, Offer

if TYPE_CHECKING:
    from ...completion import CoreRequest
    from ...datatype.buffer import BufferSpec
    from ...datatype.datatype import Datatype
    from ...op.handle import Op

#: The version of this interface; components declare the version they were written against.
INTERFACE_VERSION = (1, 0)

# Window flavors (``MPI.WIN_FLAVOR_*``, Open MPI 5's values).
#: ``Win.Create``: the program gives the memory.
FLAVOR_CREATE: Final = 1
#: ``Win.Allocate``: MPI allocates the memory.
FLAVOR_ALLOCATE: Final = 2
#: ``Win.Create_dynamic``: memory is attached and detached later.
FLAVOR_DYNAMIC: Final = 3
#: ``Win.Allocate_shared``: MPI allocates memory every process of the window can load/store.
FLAVOR_SHARED: Final = 4

#: The name of each flavor, for messages.
FLAVOR_NAMES: Final = {
    FLAVOR_CREATE: "create",
    FLAVOR_ALLOCATE: "allocate",
    FLAVOR_DYNAMIC: "dynamic",
    FLAVOR_SHARED: "shared",
}

# Memory models (``MPI.WIN_SEPARATE``/``WIN_UNIFIED``).
MODEL_SEPARATE: Final = 1
MODEL_UNIFIED: Final = 2

# Lock types (``MPI.LOCK_EXCLUSIVE``/``LOCK_SHARED``, Open MPI's values).
LOCK_EXCLUSIVE: Final = 1
LOCK_SHARED: Final = 2


@attrs.frozen
class OscQuery:
    """What a component is asked about: a window of ``flavor`` over ``comm``.

    ``comm`` is the API communicator the program passed (``MPI.Intracomm``), ``size`` the bytes
    of this process's part (0 for a dynamic window), ``disp_unit`` its displacement unit and
    ``info`` the window's info hints (key -> value).
    """

    flavor: int
    comm: Any
    size: int
    disp_unit: int
    info: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class WindowSetup:
    """What :meth:`OscModule.setup` gets: the query, plus this process's memory.

    ``memory`` is the writable byte view the program gave (``Win.Create``; may be empty) or
    ``None`` when the module must allocate ``size`` bytes itself (``Allocate``,
    ``Allocate_shared``) or the window is dynamic.
    """

    query: OscQuery
    memory: memoryview | None


@attrs.frozen
class Target:
    """Where an RMA call acts: ``count`` elements of ``datatype`` at ``disp`` on ``rank``.

    ``disp`` is in the target's displacement units for windows with memory, in bytes (an
    address from ``MPI.Get_address`` of attached memory) for dynamic windows.
    """

    rank: int
    disp: int
    count: int
    datatype: Datatype


class OscModule(abc.ABC):
    """One window's implementation of one-sided communication.

    Made by a component's offer for a single window, set up collectively by :meth:`setup`
    and released by :meth:`free` (collective too).  The RMA calls return a
    :class:`~ompy.ompi.completion.CoreRequest` the API wraps for ``Rput`` & co. and waits on
    for nothing else (the synchronisation calls complete plain ``Put`` & co.).
    """

    #: The name of the component, for ``Get_info``/messages.
    component: str = ""

    # -- creation and memory ------------------------------------------------------------------

    @abc.abstractmethod
    def setup(self, setup: WindowSetup) -> None:
        """Make the window (collective over ``setup.query.comm``): memory, peers' layout."""

    @property
    @abc.abstractmethod
    def memory(self) -> memoryview:
        """This process's window memory (a writable byte view; empty for dynamic windows)."""

    @property
    @abc.abstractmethod
    def model(self) -> int:
        """The memory model, ``MODEL_UNIFIED`` or ``MODEL_SEPARATE``."""

    @abc.abstractmethod
    def attach(self, memory: memoryview, address: int) -> None:
        """Expose ``memory`` (starting at the absolute ``address``) in a dynamic window."""

    @abc.abstractmethod
    def detach(self, address: int) -> None:
        """Stop exposing the memory attached at ``address``."""

    def shared_query(self, rank: int) -> tuple[memoryview, int]:
        """The memory and displacement unit of ``rank`` for direct load/store.

        Only modules of shared windows can answer; the default raises ``MPI.Exception``
        (``ERR_RMA_FLAVOR``), as Open MPI does for windows that are not shared.
        """
        from ...errors import ERR_RMA_FLAVOR
        from ...errors import Exception as MPIException

        raise MPIException(
            ERR_RMA_FLAVOR,
            f"Win.Shared_query: the window's osc component '{self.component}' serves windows "
            "that are not shared; only Win.Allocate_shared windows can be queried",
        )

    @abc.abstractmethod
    def free(self) -> None:
        """Release the window (collective): every pending operation completes first."""

    # -- communication --------------------------------------------------------------------------

    @abc.abstractmethod
    def put(self, origin: BufferSpec, target: Target) -> CoreRequest:
        """Write ``origin`` into the target's memory."""

    @abc.abstractmethod
    def get(self, origin: BufferSpec, target: Target) -> CoreRequest:
        """Read the target's memory into ``origin`` (writable)."""

    @abc.abstractmethod
    def accumulate(self, origin: BufferSpec, target: Target, op: Op) -> CoreRequest:
        """Combine ``origin`` into the target's memory with ``op`` (atomic per element)."""

    @abc.abstractmethod
    def get_accumulate(
        self, origin: BufferSpec | None, result: BufferSpec, target: Target, op: Op
    ) -> CoreRequest:
        """Fetch the target's data into ``result``, then combine ``origin`` into it.

        ``origin`` is None for ``op`` ``NO_OP`` (a pure atomic read).
        """

    @abc.abstractmethod
    def compare_and_swap(
        self, origin: BufferSpec, compare: BufferSpec, result: BufferSpec, target: Target
    ) -> CoreRequest:
        """Replace the target element by ``origin`` if it equals ``compare``; old value in
        ``result`` (one element, atomically)."""

    # -- synchronisation ----------------------------------------------------------------------

    @abc.abstractmethod
    def fence(self, assertion: int) -> None:
        """End the current fence epoch and start the next (collective)."""

    @abc.abstractmethod
    def start(self, ranks: Sequence[int], assertion: int) -> None:
        """Begin an access epoch to the window ranks ``ranks`` (PSCW)."""

    @abc.abstractmethod
    def complete(self) -> None:
        """End the access epoch begun by :meth:`start`."""

    @abc.abstractmethod
    def post(self, ranks: Sequence[int], assertion: int) -> None:
        """Begin an exposure epoch to the window ranks ``ranks`` (PSCW)."""

    @abc.abstractmethod
    def wait(self) -> None:
        """End the exposure epoch once every origin of it called :meth:`complete`."""

    @abc.abstractmethod
    def test(self) -> bool:
        """:meth:`wait` if it would not block; whether the exposure epoch ended."""

    @abc.abstractmethod
    def lock(self, lock_type: int, rank: int, assertion: int) -> None:
        """Begin a passive-target access epoch to ``rank`` (returns once the lock is held)."""

    @abc.abstractmethod
    def unlock(self, rank: int) -> None:
        """Complete every operation to ``rank`` and release its lock."""

    @abc.abstractmethod
    def lock_all(self, assertion: int) -> None:
        """A shared lock on every rank of the window."""

    @abc.abstractmethod
    def unlock_all(self) -> None:
        """Release the locks of :meth:`lock_all`."""

    @abc.abstractmethod
    def flush(self, rank: int) -> None:
        """Complete every operation to ``rank`` at the target."""

    @abc.abstractmethod
    def flush_all(self) -> None:
        """Complete every operation of this process at their targets."""

    def flush_local(self, rank: int) -> None:
        """Complete the operations to ``rank`` at the origin; default: :meth:`flush`."""
        self.flush(rank)

    def flush_local_all(self) -> None:
        """Complete every operation at the origin; default: :meth:`flush_all`."""
        self.flush_all()

    def sync(self) -> None:  # noqa: B027 (optional: a no-op in the unified model)
        """Synchronise the private and public copies (``Win.Sync``); nothing to do in the
        unified model, the default."""


class OscComponent(Component[OscQuery, OscModule]):
    """Base class of osc components: ``query`` offers a new :class:`OscModule` for a window.

    Selection is per window (``osc`` parameter, e.g. ``--mca osc pt2pt``); a component that
    cannot serve the flavor or the communicator (``sm``: processes on several nodes) offers
    nothing.
    """

    framework: ClassVar[str] = "osc"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: OscQuery) -> Offer[OscModule] | None:
        """Offer a module for the window described by ``context`` (the default stays out)."""
        return None
