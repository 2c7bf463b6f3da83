"""Info hints of communicators: ``Comm.Set_info``/``Get_info``, the ``info`` property and
``Dup_with_info``.

A communicator stores the hints it was given (``Communicator.hints``): ``Dup`` copies its
parent's, ``Dup(info)``/``Dup_with_info(info)``, ``Split_type(..., info)`` and
``Create_from_group(..., info)`` start from ``info``'s, and ``Set_info`` adds to (or replaces
values of) the ones in force, as MPI 4 lets an implementation keep hints it does not act on.
``Get_info`` returns a new ``MPI.Info`` with them; ompy acts on none yet, so it reports what
the program set.
"""

from __future__ import annotations

from typing import Self

from ..accessors import GetSetProperty
from .communicator import Communicator
from .info import Info, info_items


class CommInfo:
    """The info half of :class:`~.comm.Comm` (``_live`` and ``Dup`` come from Comm)."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    def Dup(self, info: Info | None = None) -> Self:  # provided by Comm
        raise NotImplementedError

    def Dup_with_info(self, info: Info) -> Self:
        """Duplicate a communicator with hints."""
        info_items(info, "Comm.Dup_with_info")  # the type check, before the collective
        return self.Dup(info)

    def Set_info(self, info: Info) -> None:
        """Set new values for the hints associated with a communicator."""
        c = self._live("Comm.Set_info")
        c.hints.update(info_items(info, "Comm.Set_info"))

    def Get_info(self) -> Info:
        """Return the current hints for a communicator (a new info object)."""
        return Info.Create(self._live("Comm.Get_info").hints)

    info = GetSetProperty(Get_info, Set_info, "Info hints.")
