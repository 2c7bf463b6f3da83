"""The state of one RMA window (what every ``MPI.Win`` handle on it shares) and its epochs.

The osc module does the communication; this object keeps what the MPI API itself must know
to check a program's calls: the window's group, the module, its name, attributes, hints and
error handler, and which epochs are open (so a ``Put`` outside any access epoch, ``Complete``
without ``Start`` or ``Unlock`` of a rank never locked raise ``ERR_RMA_SYNC`` here, before any
module is asked).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ..attributes import AttributeSet
from ..errhandler import ERRORS_RETURN, ErrhandlerObject
from ..errors import ERR_RMA_SYNC
from ..errors import Exception as MPIException

if TYPE_CHECKING:
    from ..group import Group
    from ..instance import Instance
    from ..mca.osc.interface import OscModule


@attrs.define(eq=False)
class Epochs:
    """Which synchronisation epochs of a window this process has open.

    ``fence`` is true between a ``Fence`` (without ``MODE_NOSUCCEED``) and the next; ``access``
    holds the target ranks of a ``Start``; ``exposure`` whether a ``Post`` awaits its
    ``Wait``; ``locked`` the ranks locked one by one, ``lock_all`` a ``Lock_all``.
    """

    fence: bool = False
    access: frozenset[int] | None = None
    exposure: bool = False
    locked: dict[int, int] = attrs.field(factory=dict)
    lock_all: bool = False

    def may_access(self, rank: int, call: str) -> None:
        """Raise ``ERR_RMA_SYNC`` unless an epoch of this process lets it access ``rank``."""
        if self.fence or self.lock_all or rank in self.locked:
            return
        if self.access is not None and rank in self.access:
            return
        if self.access is not None:
            raise MPIException(
                ERR_RMA_SYNC,
                f"{call}: rank {rank} is not in the group of the access epoch begun by Win.Start "
                f"(ranks {sorted(self.access)})",
            )
        raise MPIException(
            ERR_RMA_SYNC,
            f"{call}: no access epoch to rank {rank} is open; begin one with Win.Fence, "
            "Win.Start, Win.Lock or Win.Lock_all",
        )

    def passive(self, rank: int) -> bool:
        """Whether a passive-target epoch to ``rank`` is open (flushes need one)."""
        return self.lock_all or rank in self.locked

    @property
    def busy(self) -> str | None:
        """The epoch left open, for ``Free``'s message; None when none is."""
        if self.access is not None:
            return "an access epoch (Win.Start without Win.Complete)"
        if self.exposure:
            return "an exposure epoch (Win.Post without Win.Wait)"
        if self.locked or self.lock_all:
            return "a passive-target epoch (Win.Lock without Win.Unlock)"
        return None


@attrs.define(eq=False)
class Window:
    """One window of this process."""

    instance: Instance
    module: OscModule
    group: Group
    rank: int
    size: int
    flavor: int
    disp_unit: int
    #: This process's window size in bytes (0 for a dynamic window).
    nbytes: int
    #: The memory the program gave (``Win.Create``), kept alive as long as the window.
    owner: Any = None
    name: str = ""
    hints: dict[str, str] = attrs.field(factory=dict)
    errhandler: ErrhandlerObject = ERRORS_RETURN
    attributes: AttributeSet = attrs.field(factory=AttributeSet)
    epochs: Epochs = attrs.field(factory=Epochs)
    freed: bool = False
    #: Regions attached to a dynamic window: address -> byte count.
    attached: dict[int, int] = attrs.field(factory=dict)
