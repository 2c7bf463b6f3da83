"""What a pml component needs to build its module: who we are, who the others are, transports.

The MPI init sequence builds one :class:`PmlContext` after the run-time has given this process
its identity and every rank has published its :class:`~ompy.opal.proc.Proc` information, and
passes it to ``open_framework(pml framework, registry).select_one(context)``.  The component
builds its BML (which selects the BTLs, whose components publish contact information in the
modex) while answering ``query``; ``add_procs(context.procs, world ranks)`` follows after the
modex fence.
"""

from __future__ import annotations

import attrs

from ompy.opal.datatype.arch import PeerArchs
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.params import Registry
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine


def _procs_by_rank(_instance: object, _attribute: attrs.Attribute, procs: list[Proc]) -> None:
    base = procs[0].rank if procs and isinstance(procs[0], Proc) else 0
    for index, proc in enumerate(procs):
        if not isinstance(proc, Proc):
            raise TypeError(f"PmlContext.procs[{index}] must be a Proc, got {proc!r}")
        if proc.rank != base + index:
            raise ValueError(
                f"PmlContext.procs is indexed by world rank (universe ranks {base}, {base + 1}, "
                f"...), but procs[{index}] is rank {proc.rank}"
            )


@attrs.frozen
class PmlContext:
    """This process (``proc``), every world rank (``procs[r]`` is world rank ``r``, whose
    ``rank`` is its universe rank: the job's base plus ``r``, see ``ompy.ompi.proctable``),
    the BTLs' context (proc, modex, secret, progress engine) and the parameter registry."""

    proc: Proc
    procs: list[Proc] = attrs.field(validator=_procs_by_rank)
    btl_context: BtlContext
    registry: Registry
    #: Every process's architecture (the instance's): the PML converts typed data between
    #: processes that represent it differently.  The default knows only this process.
    archs: PeerArchs = attrs.field(factory=PeerArchs)

    @property
    def progress(self) -> ProgressEngine:
        """The progress engine every blocking wait of this process runs."""
        return self.btl_context.progress
