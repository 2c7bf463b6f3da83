"""Every process this one can address, by the number groups and communicators use for it.

Groups, communicators and the PML name a process by a small integer, its *index*: the world
rank for a process of this job (``0..world_size-1``), and for a process of another job (one
this job spawned, was spawned by, or connected to through a port) the next free index, given
when it first appears (:meth:`ProcTable.add_foreign`).  So a group of world ranks keeps the
numbering MPI users know, and a process of another job never collides with a world rank.

Transports need a name that every process of the launcher agrees on: the process's
*universe rank* (its world rank plus its job's base, see ``ompy.orte.control.universe``),
carried as :attr:`~ompy.opal.proc.Proc.rank`.  This table translates between the two, as
Open MPI's ``ompi_proc`` list maps process names to the ``ompi_proc_t`` a group points at.
The PML is told both: ``add_procs(procs, keys)`` keys each endpoint by index.

It is also the modex reader of the process's :class:`~ompy.opal.datatype.arch.PeerArchs`,
which asks by index: :meth:`get` asks the run-time's modex by universe rank.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ompy.opal.proc import Proc


class ProcTable:
    """Index <-> :class:`Proc` (whose ``rank`` is the universe rank) for one process."""

    def __init__(self, world: Sequence[Proc], modex: Any = None) -> None:
        self._procs: list[Proc] = list(world)
        self._index = {
            proc.rank: index for index, proc in enumerate(self._procs) if isinstance(proc, Proc)
        }
        self.world_size = len(self._procs)
        self._modex = modex
        self._lock = threading.Lock()
        #: Node ids by host name: this job's, then one more per host only other jobs use.
        #: (A loopback world's procs are not opal Procs: no node names, no other jobs.)
        self._nodes = {p.node_name: p.node_id for p in self._procs if isinstance(p, Proc)}

    def __len__(self) -> int:
        return len(self._procs)

    def proc(self, index: int) -> Proc:
        """The process with this index (``IndexError`` if none has it)."""
        if index < 0:
            raise IndexError(f"process index {index} is negative")
        return self._procs[index]

    def universe_rank(self, index: int) -> int:
        return self.proc(index).rank

    def index_of(self, universe_rank: int) -> int | None:
        """The index of the process with this universe rank, or None if it was never added."""
        return self._index.get(universe_rank)

    def add_foreign(self, procs: Sequence[Proc]) -> tuple[list[int], list[Proc]]:
        """Give each process an index (the one it has if it is known already).

        Returns every process's index, in order, and the processes that were new (the caller
        makes them reachable: ``pml.add_procs(new, keys)``).
        """
        indices: list[int] = []
        new: list[Proc] = []
        with self._lock:
            for proc in procs:
                index = self._index.get(proc.rank)
                if index is None:
                    index = len(self._procs)
                    self._procs.append(proc)
                    self._index[proc.rank] = index
                    new.append(proc)
                elif self._procs[index] != proc:
                    raise ValueError(
                        f"{proc} has universe rank {proc.rank}, which already names "
                        f"{self._procs[index]}"
                    )
                indices.append(index)
        return indices, new

    def node_id_for(self, node_name: str) -> int:
        """The node id of a host in this job's numbering (a new one for a host it lacks)."""
        with self._lock:
            node_id = self._nodes.get(node_name)
            if node_id is None:
                node_id = max(self._nodes.values(), default=-1) + 1
                self._nodes[node_name] = node_id
            return node_id

    def get(self, index: int, key: str) -> Any:
        """The modex value the process with this index published (by its universe rank)."""
        if self._modex is None:
            raise LookupError(f"no modex: cannot read {key!r} of process {index}")
        return self._modex.get(self.universe_rank(index), key)
