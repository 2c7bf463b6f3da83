"""Which algorithm runs: the fixed decision rules, and what a forced choice may not override.

Every operation has an ``auto`` rule of communicator size ``p`` and message size (bytes, as
described per operation below) and, when the user forces an algorithm with
``coll_tuned_<op>_algorithm``, a check that the algorithm can run for the call at hand; one
that cannot (Rabenseifner with a non-commutative operation, recursive doubling allgather on
3 ranks) falls back to the ``auto`` choice, which always can, with a one-line note at
``coll_tuned_verbose >= 1``.  The rules only read values that are the same on every member of
the communicator, so all members always pick the same algorithm.

The thresholds come from ``benchmarks/calibrate.py`` run on the development machine (2 cores,
shared memory, 2 to 8 ranks, other jobs running): see docs/collectives.md for the table.  Up
to :data:`MEASURED` ranks the rules follow what was measured; beyond, nothing was measured
and the rules of the literature (Open MPI's and MPICH's thresholds) stay.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .util import is_pof2

KIB: Final = 1024
MIB: Final = 1024 * KIB
#: The largest communicator the calibration measured.
MEASURED: Final = 8

#: Operation -> the algorithms that can be forced (``auto`` first: the decision rule).
ALGORITHMS: Final[dict[str, tuple[str, ...]]] = {
    "barrier": ("auto", "recursive_doubling", "bruck"),
    "bcast": ("auto", "binomial", "pipeline", "binary", "scatter_allgather"),
    "reduce": ("auto", "binomial", "pipeline"),
    "allreduce": ("auto", "recursive_doubling", "ring", "rabenseifner", "reduce_bcast"),
    "allgather": ("auto", "ring", "recursive_doubling", "bruck", "neighbor_exchange"),
    "allgatherv": ("auto", "ring"),
    "alltoall": ("auto", "pairwise", "linear", "bruck"),
    "alltoallv": ("auto", "pairwise", "linear"),
    "alltoallw": ("auto", "pairwise", "linear"),
    "gather": ("auto", "binomial", "linear"),
    "gatherv": ("auto", "linear", "linear_sync", "binomial"),
    "scatter": ("auto", "binomial", "linear"),
    "scatterv": ("auto", "linear", "binomial"),
    "reduce_scatter": ("auto", "recursive_halving", "ring", "nonoverlapping"),
    "reduce_scatter_block": ("auto", "recursive_halving", "ring", "nonoverlapping"),
    "scan": ("auto", "recursive_doubling", "linear"),
    "exscan": ("auto", "recursive_doubling", "linear"),
}

#: What each operation's ``nbytes`` means in the rules.
MEASURE: Final[dict[str, str]] = {
    "barrier": "nothing",
    "bcast": "the message",
    "reduce": "the vector",
    "allreduce": "the vector",
    "allgather": "one block",
    "allgatherv": "all blocks",
    "alltoall": "one block",
    "alltoallv": "nothing",
    "alltoallw": "nothing",
    "gather": "one block",
    "gatherv": "nothing (only the root knows the blocks' sizes)",
    "scatter": "one block",
    "scatterv": "nothing (only the root knows the blocks' sizes)",
    "reduce_scatter": "the whole input vector",
    "reduce_scatter_block": "the whole input vector",
    "scan": "the vector",
    "exscan": "the vector",
}

Rule = Callable[[int, int, bool], str]


def _barrier(size: int, nbytes: int, commutative: bool) -> str:
    return "recursive_doubling" if is_pof2(size) else "bruck"


def _bcast(size: int, nbytes: int, commutative: bool) -> str:
    if size <= MEASURED or nbytes < 64 * KIB:  # binomial won every measured size
        return "binomial"
    return "pipeline"


def _reduce(size: int, nbytes: int, commutative: bool) -> str:
    return "binomial" if size <= MEASURED or nbytes < 256 * KIB else "pipeline"


def _allreduce(size: int, nbytes: int, commutative: bool) -> str:
    if not commutative or nbytes < 16 * KIB:
        return "recursive_doubling"
    if size > MEASURED:
        return "rabenseifner" if is_pof2(size) else "ring"
    if nbytes >= MIB and is_pof2(size):
        return "rabenseifner"
    return "recursive_doubling" if size <= 2 else "reduce_bcast"


def _allgather(size: int, nbytes: int, commutative: bool) -> str:
    if is_pof2(size):
        return "recursive_doubling"
    if nbytes * size < 64 * KIB:
        return "bruck"
    return "neighbor_exchange" if size % 2 == 0 else "ring"


def _alltoall(size: int, nbytes: int, commutative: bool) -> str:
    if size <= MEASURED:
        return "linear"
    if nbytes <= 256:
        return "bruck"
    return "linear" if nbytes * size <= 1024 * KIB else "pairwise"


def _alltoallv(size: int, nbytes: int, commutative: bool) -> str:
    return "linear" if size <= MEASURED else "pairwise"


def _vector_rooted(size: int, nbytes: int, commutative: bool) -> str:
    return "linear" if size <= MEASURED else "binomial"


def _alltoallw(size: int, nbytes: int, commutative: bool) -> str:
    return "linear" if size <= MEASURED else "pairwise"


def _rooted(size: int, nbytes: int, commutative: bool) -> str:
    return "binomial" if nbytes * size < 64 * KIB else "linear"


def _scatter(size: int, nbytes: int, commutative: bool) -> str:
    return "linear" if size <= MEASURED else _rooted(size, nbytes, commutative)


def _reduce_scatter(size: int, nbytes: int, commutative: bool) -> str:
    if not commutative:
        return "nonoverlapping"
    return "recursive_halving" if nbytes < 512 * KIB or is_pof2(size) else "ring"


def _scan(size: int, nbytes: int, commutative: bool) -> str:
    return "linear" if size <= MEASURED else "recursive_doubling"


RULES: Final[dict[str, Rule]] = {
    "barrier": _barrier,
    "bcast": _bcast,
    "reduce": _reduce,
    "allreduce": _allreduce,
    "allgather": _allgather,
    "allgatherv": lambda size, nbytes, commutative: "ring",
    "alltoall": _alltoall,
    "alltoallv": _alltoallv,
    "alltoallw": _alltoallw,
    "gather": _rooted,
    "gatherv": _vector_rooted,
    "scatter": _scatter,
    "scatterv": _vector_rooted,
    "reduce_scatter": _reduce_scatter,
    "reduce_scatter_block": _reduce_scatter,
    "scan": _scan,
    "exscan": _scan,
}

_COMMUTATIVE_ONLY: Final = {
    ("allreduce", "ring"),
    ("allreduce", "rabenseifner"),
    ("reduce_scatter", "recursive_halving"),
    ("reduce_scatter", "ring"),
    ("reduce_scatter_block", "recursive_halving"),
    ("reduce_scatter_block", "ring"),
}


def obstacle(operation: str, algorithm: str, size: int, commutative: bool) -> str | None:
    """Why ``algorithm`` cannot run this call of ``operation``, or ``None`` if it can."""
    if not commutative and (operation, algorithm) in _COMMUTATIVE_ONLY:
        return "it needs a commutative operation"
    if operation == "allgather" and algorithm == "recursive_doubling" and not is_pof2(size):
        return f"it needs a power-of-two number of ranks, not {size}"
    if operation == "allgather" and algorithm == "neighbor_exchange" and size % 2:
        return f"it needs an even number of ranks, not {size}"
    return None


def decide(  # noqa: PLR0917 (one argument per input of the rule)
    operation: str,
    forced: str,
    size: int,
    nbytes: int,
    commutative: bool,
    note: Callable[[str], None] | None = None,
) -> str:
    """The algorithm for one call: ``forced`` if it can run (and is not ``auto``), else the rule.

    ``note`` receives the one-line explanation when a forced algorithm is set aside.
    """
    if forced != "auto":
        if forced not in ALGORITHMS[operation]:
            raise ValueError(
                f"'{forced}' is not a {operation} algorithm of coll/tuned; expected one of "
                f"{', '.join(ALGORITHMS[operation])}"
            )
        reason = obstacle(operation, forced, size, commutative)
        if reason is None:
            return forced
        chosen = RULES[operation](size, nbytes, commutative)
        if note is not None:
            note(
                f"coll_tuned_{operation}_algorithm={forced} cannot run here ({reason}); "
                f"using {chosen}"
            )
        return chosen
    return RULES[operation](size, nbytes, commutative)
