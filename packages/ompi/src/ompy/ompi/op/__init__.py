"""Reduction operations: ``MPI.Op``, the predefined operations and ``Op.Create``.

The loops behind the predefined operations come from the op framework
(:mod:`ompy.ompi.mca.op`); this package is the MPI object around them.
"""

from __future__ import annotations

from .handle import (
    BAND,
    BOR,
    BXOR,
    LAND,
    LOR,
    LXOR,
    MAX,
    MAXLOC,
    MIN,
    MINLOC,
    NO_OP,
    OP_NULL,
    PREDEFINED,
    PROD,
    REPLACE,
    SUM,
    Op,
    predefined,
)

__all__ = [
    "BAND",
    "BOR",
    "BXOR",
    "LAND",
    "LOR",
    "LXOR",
    "MAX",
    "MAXLOC",
    "MIN",
    "MINLOC",
    "NO_OP",
    "OP_NULL",
    "PREDEFINED",
    "PROD",
    "REPLACE",
    "SUM",
    "Op",
    "predefined",
]
