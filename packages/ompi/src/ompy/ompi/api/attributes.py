"""Communicator attributes: the ``Comm`` methods, the predefined attributes, and their life cycle.

``COMM_WORLD`` carries the predefined attributes with Open MPI's values and Python types (ints,
as mpi4py returns them): ``TAG_UB`` (the PML's largest tag), ``HOST`` (``PROC_NULL``: no host
process), ``IO`` (``ANY_SOURCE``: every process can do I/O), ``WTIME_IS_GLOBAL`` (0: clocks are
not synchronized), ``APPNUM`` (0: one application), ``UNIVERSE_SIZE`` (the number of processes
of the job) and ``LASTUSEDCODE`` (the largest error code in use, read when asked).  As in Open
MPI, ``Dup`` of a communicator that has them passes them on, except ``LASTUSEDCODE``, which only
``COMM_WORLD`` has; ``COMM_SELF`` and communicators made by ``Split``/``Create`` have none.

User attributes follow :mod:`ompy.ompi.attributes`: ``Dup`` copies them through the copy
callbacks, ``Free`` deletes them, and ``Finalize`` deletes ``COMM_SELF``'s first of all (MPI's
rule: the last set is deleted first), then ``COMM_WORLD``'s, while both still work.
"""

from __future__ import annotations

from typing import Any

from ..attributes import (
    PREDEFINED_COMM_KEYVALS,
    AttributeSet,
    CachesAttributes,
    Keyval,
    process_keyvals,
)
from ..constants import (
    ANY_SOURCE,
    APPNUM,
    HOST,
    IO,
    LASTUSEDCODE,
    PROC_NULL,
    TAG_UB,
    UNIVERSE_SIZE,
    WTIME_IS_GLOBAL,
)
from .communicator import Communicator


class CommAttributes(CachesAttributes):
    """The attribute methods of ``Comm`` (keyvals for communicators)."""

    __slots__ = ()

    _attr_kind = "Comm"

    def _live(self, call: str) -> Communicator:
        raise NotImplementedError  # Comm's

    def _attributes(self, call: str) -> AttributeSet:
        return self._live(call).attributes

    def _attr_handle(self) -> tuple[Any, Any]:
        return callback_handle(self._live("Comm attribute callback"))

    def _attr_value(self, keyval: Keyval, value: Any) -> Any:
        if keyval.number == LASTUSEDCODE:
            return self._live("Comm.Get_attr").instance.error_codes.last_used
        return value


def callback_handle(communicator: Communicator) -> tuple[Any, Any]:
    """A temporary handle to ``communicator`` for callbacks, and what nulls it afterwards."""
    from .comm import Intracomm  # the handle classes build on this module

    return Intracomm._lend(communicator)


def universe_size(instance: Any) -> int:
    """``MPI.UNIVERSE_SIZE``: the processes the allocation has room for (its slots, as the
    launcher says: ``--host a:4,b:4`` gives 8), at least the world's size."""
    runtime = instance.runtime
    if runtime is None:
        return int(instance.world_size)
    return max(int(runtime.identity.universe), int(instance.world_size))


def install_predefined(world: Communicator) -> None:
    """Put the predefined attributes on ``world`` (``COMM_WORLD``), as MPI initialization does."""
    instance = world.instance
    values = {
        TAG_UB: world.tag_ub,
        HOST: PROC_NULL,
        IO: ANY_SOURCE,
        WTIME_IS_GLOBAL: 0,
        APPNUM: 0,
        UNIVERSE_SIZE: universe_size(instance),
        LASTUSEDCODE: instance.error_codes.last_used,  # read live by Get_attr
    }
    for number, value in values.items():
        world.attributes.put(PREDEFINED_COMM_KEYVALS[number], value)


def copy_attributes(parent: Communicator, child: Communicator, call: str) -> None:
    """Give ``child`` (a ``Dup`` of ``parent``) the attributes the copy callbacks ask for.

    If a callback fails, what was copied is deleted again, ``child`` is destroyed, and the
    ``MPI.Exception`` goes to the caller.
    """
    if not parent.attributes:
        return
    table = process_keyvals()
    try:
        parent.attributes.copy_to(child.attributes, table, callback_handle(parent), call)
    except BaseException:
        child.attributes.delete_all(table, callback_handle(child))
        child.destroy()
        raise


def delete_attributes(communicator: Communicator) -> None:
    """Delete every attribute of ``communicator`` (``Free``, ``Finalize``), the last set first."""
    if communicator.attributes:
        communicator.attributes.delete_all(process_keyvals(), callback_handle(communicator))
