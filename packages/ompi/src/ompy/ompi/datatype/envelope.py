"""How a datatype was made: its combiner and the arguments of the call (``Get_envelope``).

MPI lets a program ask any datatype for the constructor that made it and that constructor's
arguments (``MPI_Type_get_envelope`` / ``MPI_Type_get_contents``), sorted into four lists:
integers, addresses, large counts and datatypes.  mpi4py makes every datatype through the
large-count (``_c``) constructors, so counts, block lengths, displacements and bounds come back
in the *counts* list, as from Open MPI 5; only what is an ``int`` in every form (the number of
dimensions, the order, the darray process grid) is in the *integers*.  :func:`decode` turns an
envelope into mpi4py's ``(base, "COMBINER", {keyword: value})`` form, which names the
arguments of the ``Create_*`` call that makes an equal datatype again: pickling uses it.

Combiner values are Open MPI 5's (``mpi.h``); ``COMBINER_VALUE_INDEX`` is MPI 4.1's, which Open
MPI 5 lacks, so ompy numbers it after the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs
import numpy as np

if TYPE_CHECKING:
    from .datatype import Datatype

COMBINER_NAMED: Final = 0
COMBINER_DUP: Final = 1
COMBINER_CONTIGUOUS: Final = 2
COMBINER_VECTOR: Final = 3
COMBINER_HVECTOR: Final = 5
COMBINER_INDEXED: Final = 6
COMBINER_HINDEXED: Final = 8
COMBINER_INDEXED_BLOCK: Final = 9
COMBINER_STRUCT: Final = 11
COMBINER_SUBARRAY: Final = 12
COMBINER_DARRAY: Final = 13
COMBINER_F90_REAL: Final = 14
COMBINER_F90_COMPLEX: Final = 15
COMBINER_F90_INTEGER: Final = 16
COMBINER_RESIZED: Final = 17
COMBINER_HINDEXED_BLOCK: Final = 18
COMBINER_VALUE_INDEX: Final = 19

#: The combiner's name in mpi4py's ``decode`` (and in ``Create_<name lowercased>``).
COMBINER_NAMES: Final[dict[int, str]] = {
    COMBINER_NAMED: "NAMED",
    COMBINER_DUP: "DUP",
    COMBINER_CONTIGUOUS: "CONTIGUOUS",
    COMBINER_VECTOR: "VECTOR",
    COMBINER_HVECTOR: "HVECTOR",
    COMBINER_INDEXED: "INDEXED",
    COMBINER_HINDEXED: "HINDEXED",
    COMBINER_INDEXED_BLOCK: "INDEXED_BLOCK",
    COMBINER_HINDEXED_BLOCK: "HINDEXED_BLOCK",
    COMBINER_STRUCT: "STRUCT",
    COMBINER_SUBARRAY: "SUBARRAY",
    COMBINER_DARRAY: "DARRAY",
    COMBINER_RESIZED: "RESIZED",
    COMBINER_VALUE_INDEX: "VALUE_INDEX",
    COMBINER_F90_INTEGER: "F90_INTEGER",
    COMBINER_F90_REAL: "F90_REAL",
    COMBINER_F90_COMPLEX: "F90_COMPLEX",
}

#: Combiners of datatypes that are predefined (``is_predefined``) though not named.
PREDEFINED_COMBINERS: Final = frozenset(
    {
        COMBINER_NAMED,
        COMBINER_VALUE_INDEX,
        COMBINER_F90_INTEGER,
        COMBINER_F90_REAL,
        COMBINER_F90_COMPLEX,
    }
)


@attrs.frozen(eq=False)
class Envelope:
    """The constructor that made a datatype and its arguments, in MPI's four lists.

    ``counts`` may be an int64 array: an indexed type of a million blocks keeps its block
    list as one array, made into Python ints only when a program asks (``Get_contents``).
    """

    combiner: int
    integers: tuple[int, ...] = ()
    addresses: tuple[int, ...] = ()
    counts: tuple[int, ...] | np.ndarray = ()
    datatypes: tuple[Datatype, ...] = ()

    def count_list(self) -> list[int]:
        """The large counts as a list of Python ints."""
        counts = self.counts
        return counts.tolist() if isinstance(counts, np.ndarray) else list(counts)

    def sizes(self) -> tuple[int, int, int, int, int]:
        """``(ni, na, nc, nd, combiner)``: what ``Get_envelope`` returns."""
        return (
            len(self.integers),
            len(self.addresses),
            len(self.counts),
            len(self.datatypes),
            self.combiner,
        )


NAMED: Final = Envelope(COMBINER_NAMED)


def decode_params(envelope: Envelope) -> dict[str, Any]:
    """The keyword arguments of the ``Create_*`` call that ``envelope`` records."""
    combiner = envelope.combiner
    i, c = envelope.integers, envelope.count_list()
    if combiner in (COMBINER_NAMED, COMBINER_DUP):
        return {}
    if combiner == COMBINER_CONTIGUOUS:
        return {"count": c[0]}
    if combiner in (COMBINER_VECTOR, COMBINER_HVECTOR):
        return {"count": c[0], "blocklength": c[1], "stride": c[2]}
    if combiner in (COMBINER_INDEXED, COMBINER_HINDEXED):
        n = c[0]
        return {"blocklengths": list(c[1 : n + 1]), "displacements": list(c[n + 1 : 2 * n + 1])}
    if combiner in (COMBINER_INDEXED_BLOCK, COMBINER_HINDEXED_BLOCK):
        n = c[0]
        return {"blocklength": c[1], "displacements": list(c[2 : n + 2])}
    if combiner == COMBINER_STRUCT:
        n = c[0]
        return {
            "blocklengths": list(c[1 : n + 1]),
            "displacements": list(c[n + 1 : 2 * n + 1]),
            "datatypes": list(envelope.datatypes),
        }
    if combiner == COMBINER_SUBARRAY:
        n = i[0]
        return {
            "sizes": list(c[:n]),
            "subsizes": list(c[n : 2 * n]),
            "starts": list(c[2 * n : 3 * n]),
            "order": i[1],
        }
    if combiner == COMBINER_DARRAY:
        n = i[2]
        return {
            "size": i[0],
            "rank": i[1],
            "gsizes": list(c[:n]),
            "distribs": list(i[3 : 3 + n]),
            "dargs": list(i[3 + n : 3 + 2 * n]),
            "psizes": list(i[3 + 2 * n : 3 + 3 * n]),
            "order": i[3 + 3 * n],
        }
    if combiner == COMBINER_RESIZED:
        return {"lb": c[0], "extent": c[1]}
    if combiner == COMBINER_VALUE_INDEX:
        return {"value": envelope.datatypes[0], "index": envelope.datatypes[1]}
    if combiner == COMBINER_F90_INTEGER:
        return {"r": i[0]}
    if combiner in (COMBINER_F90_REAL, COMBINER_F90_COMPLEX):
        return {"p": i[0], "r": i[1]}
    raise ValueError(f"unknown combiner value {combiner}")
