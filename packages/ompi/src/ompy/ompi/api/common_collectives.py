"""The collectives ``Intracomm`` and ``Intercomm`` read alike: the barriers and the objects.

``Barrier``/``Ibarrier`` take no arguments, and the lowercase collectives on Python objects
(``bcast``, ``gather``, ``scatter``, ``allgather``, ``alltoall``, ``reduce``, ``allreduce``)
read theirs the same way on both kinds of communicator; they call the communicator's coll
table, whose object operations (``bcast_object``, ...) move the objects point to point
through the instance's codec (``MPI.pickle``).  Only two things differ, and each kind says
them (:class:`~.collective.Collectives`, :class:`~.inter_collective.InterCollectives`):

- which roots are valid (a rank of the group; on an intercommunicator ``MPI.ROOT``,
  ``MPI.PROC_NULL`` or a rank of the other group): :meth:`CommonCollectives._object_root`;
- who gives the items of a ``scatter`` (the root; on an intercommunicator the process passing
  ``MPI.ROOT``): :meth:`CommonCollectives._gives_items`.

Items go to the processes that receive them: ``remote_size`` of them, the size of the other
group on an intercommunicator and of the communicator's own group otherwise.  A sequence that
is not one object per receiver is handed to the coll operation as its check's error, so the
peers already waiting learn of it (:data:`ompy.ompi.mca.coll.interface.Items`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..mca.coll import Items
from ..op import SUM
from .communicator import Communicator
from .request import Request


class CommonCollectives:
    """The collectives of both kinds of communicator that read their arguments alike
    (``_live`` gives the communicator; each kind gives the two rules that differ)."""

    __slots__ = ()
    _c: Communicator | None  # provided by Comm

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    @staticmethod
    def _object_root(root: Any, c: Communicator, call: str) -> int:  # provided by each kind
        raise NotImplementedError

    @staticmethod
    def _gives_items(c: Communicator, root: int) -> bool:  # provided by each kind
        raise NotImplementedError

    def Barrier(self) -> None:
        """Barrier synchronization (on an intercommunicator, of every process of both
        groups)."""
        # Written out, as Bcast and Allreduce are: a family's argument packing would cost
        # a third of a two-process barrier.
        c = self._c
        if c is None or c.freed:
            c = self._live("Comm.Barrier")
        c.coll.barrier(c)

    def Ibarrier(self) -> Request:
        """Nonblocking barrier synchronization."""
        c = self._live("Comm.Ibarrier")
        return Request._of(c.coll.ibarrier(c), c)

    # The lowercase barriers are the uppercase ones: they move no data, pickled or not.
    barrier = Barrier
    ibarrier = Ibarrier

    def bcast(self, obj: Any, root: int = 0) -> Any:
        """Broadcast a Python object from the root to the other processes (on an
        intercommunicator: from the root, ``root=ROOT``, to every process of the other group)."""
        c = self._live("Comm.bcast")
        return c.coll.bcast_object(c, obj, self._object_root(root, c, "Comm.bcast"))

    def gather(self, sendobj: Any, root: int = 0) -> list[Any] | None:
        """Gather Python objects to the root (a list there, ``None`` on the others); on an
        intercommunicator the objects of the other group."""
        c = self._live("Comm.gather")
        return c.coll.gather_object(c, sendobj, self._object_root(root, c, "Comm.gather"))

    def scatter(self, sendobj: Sequence[Any] | None = None, root: int = 0) -> Any:
        """Scatter Python objects: item ``i`` of the root's sequence goes to rank ``i`` (of the
        other group, on an intercommunicator)."""
        c = self._live("Comm.scatter")
        root = self._object_root(root, c, "Comm.scatter")
        if not self._gives_items(c, root):
            return c.coll.scatter_object(c, None, root)
        items = _told(_items, sendobj, c.remote_size, "Comm.scatter")
        return c.coll.scatter_object(c, items, root)

    def allgather(self, sendobj: Any) -> list[Any]:
        """Gather Python objects to every process (on an intercommunicator: the objects of
        every process of the other group, in its rank order)."""
        c = self._live("Comm.allgather")
        return c.coll.allgather_object(c, sendobj)

    def alltoall(self, sendobj: Sequence[Any]) -> list[Any]:
        """Item ``i`` of every process's sequence goes to rank ``i`` (of the other group, on
        an intercommunicator); the items received, one from each."""
        c = self._live("Comm.alltoall")
        items = _told(_items, sendobj, c.remote_size, "Comm.alltoall")
        return c.coll.alltoall_object(c, items)

    def reduce(self, sendobj: Any, op: Any = SUM, root: int = 0) -> Any | None:
        """Reduce Python objects to the root (``None`` on the others); on an
        intercommunicator the objects of the other group."""
        c = self._live("Comm.reduce")
        root = self._object_root(root, c, "Comm.reduce")
        return c.coll.reduce_object(c, sendobj, _object_op(op, "Comm.reduce"), root)

    def allreduce(self, sendobj: Any, op: Any = SUM) -> Any:
        """Reduce Python objects to every process (on an intercommunicator each group
        receives the reduction of the other group's objects)."""
        c = self._live("Comm.allreduce")
        return c.coll.allreduce_object(c, sendobj, _object_op(op, "Comm.allreduce"))


def _items(sendobj: Any, size: int, call: str) -> list[Any]:
    if sendobj is None:
        raise ValueError(f"{call}: the root must give a sequence of {size} objects, not None")
    return _one_each(sendobj, size, call, "rank")


def _one_each(sendobj: Any, count: int, call: str, per: str) -> list[Any]:
    """``sendobj`` as a list of ``count`` objects, one per ``per`` (a rank, an out-edge)."""
    try:
        items = list(sendobj)
    except TypeError:
        raise TypeError(
            f"{call}: expecting a sequence of {count} objects (one per {per}), not "
            f"{type(sendobj).__name__}"
        ) from None
    if len(items) != count:
        raise ValueError(f"{call}: expecting {count} items (one per {per}), got {len(items)}")
    return items


def _told(
    check: Callable[[Any, int, str], list[Any]], sendobj: Any, count: int, call: str
) -> Items:
    """``check``'s items (one per peer), or the ``TypeError``/``ValueError`` it raised: the
    coll operation takes either (:data:`~ompy.ompi.mca.coll.interface.Items`), so the peers
    already waiting in it learn of a bad sequence and this member raises the error."""
    try:
        return check(sendobj, count, call)
    except (TypeError, ValueError) as error:
        return error


def _object_op(op: Any, call: str) -> Any:
    if not callable(op):
        raise TypeError(
            f"{call}: op must be an MPI.Op or a function of two objects, not {type(op).__name__}"
        )
    return op


__all__ = ["CommonCollectives"]
