"""Kernel factories: one closure per (operation, numpy dtype), bound once, called per step.

Each kernel views the caller's memory as arrays with ``numpy.frombuffer`` (no copy) and writes
the result into the in-out array itself.  Binary ufuncs with ``out=`` work in place through
numpy's small cast buffers, so nothing proportional to the message is allocated; MAXLOC and
MINLOC need masks, which they compute a bounded block at a time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ompy.ompi.mca.op import Kernel

_frombuffer = np.frombuffer


def binary(ufunc: np.ufunc, dtype: np.dtype) -> Kernel:
    """``inout = ufunc(in, inout)``, elementwise, in place."""

    def kernel(inmem: Any, inoutmem: Any, count: int) -> None:
        inout = _frombuffer(inoutmem, dtype, count)
        ufunc(_frombuffer(inmem, dtype, count), inout, out=inout)

    return kernel


def location(better: np.ufunc, dtype: np.dtype, block: int) -> Kernel:
    """MAXLOC (``better`` = greater) or MINLOC (less) on a ``{value; index}`` pair dtype.

    ``in`` wins where its value is better, or equal with a lower index, as MPI specifies.
    """
    equal, less = np.equal, np.less
    logical_and, logical_or, copyto = np.logical_and, np.logical_or, np.copyto

    def kernel(inmem: Any, inoutmem: Any, count: int) -> None:
        if count == 0:
            return
        a = _frombuffer(inmem, dtype, count)
        b = _frombuffer(inoutmem, dtype, count)
        a_value, a_index, b_value, b_index = a["value"], a["index"], b["value"], b["index"]
        step = min(block, count)
        take, tie, lower = np.empty(step, bool), np.empty(step, bool), np.empty(step, bool)
        for start in range(0, count, step):
            stop = min(start + step, count)
            n = stop - start
            t, e, lo = take[:n], tie[:n], lower[:n]
            av, bv = a_value[start:stop], b_value[start:stop]
            better(av, bv, out=t)
            equal(av, bv, out=e)
            less(a_index[start:stop], b_index[start:stop], out=lo)
            logical_and(e, lo, out=e)
            logical_or(t, e, out=t)
            copyto(b[start:stop], a[start:stop], where=t)

    return kernel


def replace(dtype: np.dtype) -> Kernel:
    """``inout = in`` (MPI_REPLACE in one-sided accumulates)."""

    def kernel(inmem: Any, inoutmem: Any, count: int) -> None:
        np.copyto(_frombuffer(inoutmem, dtype, count), _frombuffer(inmem, dtype, count))

    return kernel


def no_op(inmem: Any, inoutmem: Any, count: int) -> None:
    """``inout`` unchanged (MPI_NO_OP in Get_accumulate and Fetch_and_op)."""
