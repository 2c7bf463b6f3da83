"""Glue of the op framework: MPI's operation/datatype rules and the per-pair kernel cache.

Typical use by a collective component::

    from ompy.ompi.mca.op.base import kernel

    run = kernel(op, spec.datatype)     # ERR_OP if MPI forbids the pair or nothing implements it
    run(received, spec.view, spec.count)  # spec.view = received op spec.view, in place
"""

from __future__ import annotations

from .rules import ALLOWED, TypeClass, allowed, check, type_class
from .select import (
    accumulate_kernel,
    finalize,
    forget,
    intrinsic_kernel,
    kernel,
    modules,
    opened_framework,
    reset_selection,
    user_kernel,
)

__all__ = [
    "ALLOWED",
    "TypeClass",
    "accumulate_kernel",
    "allowed",
    "check",
    "finalize",
    "forget",
    "intrinsic_kernel",
    "kernel",
    "modules",
    "opened_framework",
    "reset_selection",
    "type_class",
    "user_kernel",
]
