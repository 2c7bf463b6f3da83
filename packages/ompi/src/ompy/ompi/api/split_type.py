"""``Comm.Split_type``: splitting a communicator by where its processes run.

The split types (Open MPI's values):

- ``COMM_TYPE_SHARED``: the processes of one node (one shared-memory domain).
- ``COMM_TYPE_HW_GUIDED``: the processes confined to one hardware resource of the type the
  info key ``mpi_hw_resource_type`` names: ``mpi_shared_memory`` (the node), a name
  ``MPI.Get_hw_resource_info`` reports (``hwloc://Package``, ``hwloc://L3Cache``,
  ``hwloc://Core``, ...), or the same type without the prefix in any case (``core``,
  ``l2cache``) and Open MPI's aliases (``hwthread``, ``socket``, ``numa``, ``node``).  A process
  whose binding spans several resources of that type, a missing key and an unknown type give
  ``COMM_NULL``, as MPI 4 says.
- ``COMM_TYPE_HW_UNGUIDED``: the largest kind of resource, from the node down to the hardware
  thread, whose split gives every participant a strict subset of the communicator; the new
  communicator's info (and the caller's ``info`` object) says which kind it was
  (``mpi_hw_resource_type``).  ``COMM_NULL`` when no kind splits the processes.
- ``COMM_TYPE_RESOURCE_GUIDED`` (MPI 4.1): ``mpi_hw_resource_type`` as for HW_GUIDED, or
  ``mpi_pset_name``: the processes of that process set (``mpi://WORLD``, ``mpi://SELF``,
  ``mpix://SHARED``); a process outside it, or an unknown set, gets ``COMM_NULL``.

Where a process runs comes from its binding at the time of the call (``os.sched_getaffinity``;
a program may bind itself with ``os.sched_setaffinity``) and the topology Linux publishes
(:mod:`.hwinfo`), paired with the run-time's node id.  Every process contributes its split
type, key and placement to one allgather over the parent, and all decide from the same data:
a mismatch of split types or of the resource type named is an error raised on every process
rather than a hang.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from ..constants import UNDEFINED
from ..errors import ERR_ARG, ERR_INFO_VALUE
from ..errors import Exception as MPIException
from . import hwinfo
from .communicator import Communicator
from .info import Info, info_items
from .internal import allgather
from .session import pset_procs

if TYPE_CHECKING:
    from .comm import Comm

#: The split types (Open MPI 5's values; 1..11 are its own OMPI_COMM_TYPE_* kinds).
COMM_TYPE_SHARED = 0
COMM_TYPE_HW_UNGUIDED = 12
COMM_TYPE_HW_GUIDED = 13
COMM_TYPE_RESOURCE_GUIDED = 14

#: The info keys MPI 4.1 defines for the guided splits.
RESOURCE_KEY = "mpi_hw_resource_type"
PSET_KEY = "mpi_pset_name"
#: The resource type every implementation knows: the shared-memory domain (the node).
SHARED_MEMORY = "mpi_shared_memory"

_NAMES = {
    COMM_TYPE_SHARED: "COMM_TYPE_SHARED",
    COMM_TYPE_HW_UNGUIDED: "COMM_TYPE_HW_UNGUIDED",
    COMM_TYPE_HW_GUIDED: "COMM_TYPE_HW_GUIDED",
    COMM_TYPE_RESOURCE_GUIDED: "COMM_TYPE_RESOURCE_GUIDED",
}
#: Other spellings of the resource types, lower case -> :data:`hwinfo.TYPES` name.
_ALIASES = {
    SHARED_MEMORY: "Machine",
    "node": "Machine",
    "host": "Machine",
    "board": "Machine",
    "socket": "Package",
    "numa": "NUMANode",
    "hwthread": "PU",
}


def resource_kind(value: str) -> str | None:
    """The :data:`hwinfo.TYPES` name a ``mpi_hw_resource_type`` value stands for, or None."""
    name = value.strip().lower()
    if name.startswith(hwinfo.PREFIX):
        name = name[len(hwinfo.PREFIX) :]
    for kind in hwinfo.TYPES:
        if kind.lower() == name:
            return kind
    return _ALIASES.get(name)


def _level_name(kind: str) -> str:
    """How a resource kind is reported back in ``mpi_hw_resource_type``."""
    return SHARED_MEMORY if kind == "Machine" else hwinfo.PREFIX + kind


def _placement(c: Communicator, split_type: int, hints: dict[str, str]) -> Any:
    """This process's contribution for ``split_type`` (decided by everyone after the gather)."""
    instance = c.instance
    node = instance.procs[instance.world_rank].node_id
    if split_type == COMM_TYPE_SHARED:
        return ("node", node)
    if split_type == COMM_TYPE_HW_UNGUIDED:
        return ("levels", node, tuple(hwinfo.confinement().items()))
    if split_type in (COMM_TYPE_HW_GUIDED, COMM_TYPE_RESOURCE_GUIDED):
        if RESOURCE_KEY in hints:
            requested = hints[RESOURCE_KEY]
            kind = resource_kind(requested)
            identity = None if kind is None else hwinfo.confinement().get(kind)
            return ("resource", requested, None if identity is None else (node, identity))
        if split_type == COMM_TYPE_RESOURCE_GUIDED and PSET_KEY in hints:
            try:
                procs = pset_procs(instance, hints[PSET_KEY], "Comm.Split_type")
            except MPIException:
                return ("pset", hints[PSET_KEY], None)  # not a process set known here
            return ("pset", hints[PSET_KEY], procs)
        return ("none",)
    return ("unknown",)


def _check_agreement(entries: list[tuple[int, int, Any]]) -> int:
    """The split type every participant gave (UNDEFINED if none), or an error for all."""
    types = {split_type for split_type, _key, _where in entries if split_type != UNDEFINED}
    if len(types) > 1:
        raise MPIException(
            ERR_ARG,
            "Comm.Split_type: the processes gave different split types "
            f"({', '.join(_NAMES.get(t, str(t)) for t in sorted(types))}); all but those "
            "giving MPI.UNDEFINED must give the same",
        )
    if not types:
        return UNDEFINED
    (split_type,) = types
    if split_type not in _NAMES:
        raise MPIException(
            ERR_ARG,
            f"Comm.Split_type: split type {split_type} is not supported (use one of "
            f"{', '.join('MPI.' + name for name in _NAMES.values())} or MPI.UNDEFINED)",
        )
    if split_type not in (COMM_TYPE_HW_GUIDED, COMM_TYPE_RESOURCE_GUIDED):
        return split_type
    named = [where for t, _key, where in entries if t != UNDEFINED]
    values = {where[1] for where in named if where[0] != "none"}
    if len(values) > 1 or len({where[0] for where in named}) > 1:
        raise MPIException(
            ERR_INFO_VALUE,
            f"Comm.Split_type: the processes named different resources ({sorted(values)}) "
            f"in '{RESOURCE_KEY}'/'{PSET_KEY}'; every process must give the same",
        )
    return split_type


def _colors(split_type: int, entries: list[tuple[int, int, Any]], size: int) -> tuple[Any, str]:
    """Each rank's color (None: COMM_NULL) and the resource kind reported in the info."""
    wheres = [where if t != UNDEFINED else None for t, _key, where in entries]
    if split_type == COMM_TYPE_SHARED:
        return [None if w is None else w[1] for w in wheres], SHARED_MEMORY
    if split_type == COMM_TYPE_HW_UNGUIDED:
        return _unguided(wheres, size)
    colors: list[Hashable | None] = []
    reported = ""
    for where in wheres:
        if where is None or where[0] == "none":
            colors.append(None)
        elif where[0] == "resource":
            colors.append(where[2])
            reported = where[1]
        else:  # a process set: its members, if the caller is one
            colors.append(where[2])
            reported = where[1]
    return colors, reported


def _unguided(wheres: list[Any], size: int) -> tuple[list[Hashable | None], str]:
    """The first kind of resource, largest first, that splits every participant off into a
    strict subset of the communicator."""
    taking = [w for w in wheres if w is not None]
    for kind in hwinfo.TYPES:
        colors: list[Hashable | None] = []
        for where in wheres:
            if where is None:
                colors.append(None)
                continue
            identity = dict(where[2]).get(kind)
            colors.append(None if identity is None else (where[1], identity))
        present = [color for color, where in zip(colors, wheres, strict=True) if where is not None]
        if not taking or any(color is None for color in present):
            continue  # some participant spans several resources of this kind
        if all(present.count(color) < size for color in present):
            return colors, _level_name(kind)
    return [None] * len(wheres), ""


def split_by_type(
    handle: Comm, c: Communicator, split_type: int, key: int, info: Info | None
) -> Comm:
    """``Comm.Split_type`` on ``c`` for the handle ``handle`` (its ``_new`` builds the result)."""
    hints = info_items(info, "Comm.Split_type")
    where = None if split_type == UNDEFINED else _placement(c, split_type, hints)
    entries = allgather(c, (split_type, key, where))
    agreed = _check_agreement(entries)
    if UNDEFINED in (agreed, split_type):
        return handle._new(c, None, "SPLIT_TYPE")
    colors, reported = _colors(agreed, entries, c.size)
    mine = colors[c.rank]
    if mine is None:
        return handle._new(c, None, "SPLIT_TYPE")
    members = sorted((entries[r][1], r) for r, color in enumerate(colors) if color == mine)
    world_ranks = tuple(c.world_ranks[r] for _key, r in members)
    if reported and agreed != COMM_TYPE_SHARED:
        key_name = PSET_KEY if entries[c.rank][2][0] == "pset" else RESOURCE_KEY
        hints[key_name] = reported
        if agreed == COMM_TYPE_HW_UNGUIDED and isinstance(info, Info) and info:
            info.Set(RESOURCE_KEY, reported)  # MPI 4: the caller learns the kind chosen
    return handle._new(c, world_ranks, "SPLIT_TYPE", hints)
