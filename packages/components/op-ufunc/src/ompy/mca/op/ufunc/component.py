"""The ``ufunc`` component and its module: a numpy kernel for every predefined operation.

The framework has already checked that MPI defines the operation on the datatype; the module
maps the operation to a ufunc and binds it to the datatype's numpy dtype.  A kernel is tried
once on a single zero element when it is made, so a dtype numpy cannot handle for that ufunc
(should one appear) makes the module pass instead of failing later in a collective.
"""

from __future__ import annotations

import numpy as np

from ompy.ompi.datatype import Datatype
from ompy.ompi.mca.op import Intrinsic, Kernel, OpComponent, OpModule
from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamType

from . import __version__, kernels

_UFUNCS: dict[Intrinsic, np.ufunc] = {
    Intrinsic.MAX: np.maximum,
    Intrinsic.MIN: np.minimum,
    Intrinsic.SUM: np.add,
    Intrinsic.PROD: np.multiply,
    Intrinsic.LAND: np.logical_and,
    Intrinsic.LOR: np.logical_or,
    Intrinsic.LXOR: np.logical_xor,
    Intrinsic.BAND: np.bitwise_and,
    Intrinsic.BOR: np.bitwise_or,
    Intrinsic.BXOR: np.bitwise_xor,
}


class UfuncOpModule(OpModule):
    """Kernels for every predefined operation, made on demand for each datatype."""

    def __init__(self, loc_block: int) -> None:
        self.loc_block = loc_block

    def kernel(self, op: Intrinsic, datatype: Datatype) -> Kernel | None:
        dtype = datatype.dtype
        if op is Intrinsic.NO_OP:
            return kernels.no_op
        if op is Intrinsic.REPLACE:
            made = kernels.replace(dtype)
        elif op in (Intrinsic.MAXLOC, Intrinsic.MINLOC):
            if dtype.names != ("value", "index"):
                return None
            better = np.greater if op is Intrinsic.MAXLOC else np.less
            made = kernels.location(better, dtype, self.loc_block)
        else:
            if dtype.fields is not None:
                return None
            made = kernels.binary(_UFUNCS[op], dtype)
        return made if _works(made, dtype) else None


def _works(kernel: Kernel, dtype: np.dtype) -> bool:
    probe = bytearray(dtype.itemsize)
    try:
        kernel(bytes(dtype.itemsize), probe, 1)
    except TypeError:  # numpy has no loop for this dtype
        return False
    return True


class UfuncOpComponent(OpComponent):
    """Predefined reductions with numpy ufuncs working in place."""

    name = "ufunc"
    version = __version__
    description = "every predefined reduction on every datatype, with numpy ufuncs in place"
    default_priority = 10

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "loc_block",
            ParamType.INT,
            65536,
            "Elements MAXLOC and MINLOC compare at a time; their scratch masks take three "
            "bytes per element of one block",
            level=9,
            minimum=1,
        )

    def query(self, context: None = None) -> Offer[OpModule] | None:
        return Offer(self.priority, UfuncOpModule(self.param("loc_block")))
