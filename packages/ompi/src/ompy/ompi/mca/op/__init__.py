"""The op framework: the loops behind MPI's predefined reduction operations.

Components are found through the entry-point group ``ompy.mca.op`` (``ompy-op-ufunc`` is the
baseline, numpy ufuncs working in place) and selected with the ``op`` parameter like any
framework.  Every component that wants to run is kept, best priority first; for each
(operation, datatype) pair the best module that implements it supplies the kernel.  Callers use
:meth:`ompy.ompi.mca.op.base.OpSelection.kernel`.
"""

from __future__ import annotations

from ompy.opal.mca import Cardinality, Framework

from .interface import INTERFACE_VERSION, Intrinsic, Kernel, OpComponent, OpModule

framework = Framework.of(
    OpComponent,
    "ompi",
    Cardinality.MANY,
    "reduction operations: kernels for each predefined operation and datatype",
)

__all__ = ["INTERFACE_VERSION", "Intrinsic", "Kernel", "OpComponent", "OpModule", "framework"]
