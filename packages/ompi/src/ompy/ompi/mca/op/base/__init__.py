"""Glue of the op framework: MPI's operation/datatype rules and the per-pair kernel cache.

Typical use by a collective component::

    run = comm.instance.op.kernel(op, spec.datatype)   # ERR_OP if MPI forbids the pair or
                                                       # nothing implements it
    run(received, spec.view, spec.count)  # spec.view = received op spec.view, in place
"""

from __future__ import annotations

from .rules import ALLOWED, TypeClass, allowed, check, type_class
from .select import OpSelection, user_kernel

__all__ = [
    "ALLOWED",
    "OpSelection",
    "TypeClass",
    "allowed",
    "check",
    "type_class",
    "user_kernel",
]
