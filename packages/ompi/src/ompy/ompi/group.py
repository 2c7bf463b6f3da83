"""``Group``: an ordered set of processes, and the set operations MPI defines on it.

A group lists process identifiers (any hashable value that names one process of the job, such as
its rank in ``COMM_WORLD``); the rank of a process in a group is its index in that list.  Each
group also knows which identifier is the calling process, so ``Get_rank`` answers without a
global lookup; groups derived from one another carry that over.  As in mpi4py, a ``Group`` object
is a handle: ``Free()`` turns it into ``GROUP_NULL``, and empty results are ``GROUP_EMPTY``.
"""

from __future__ import annotations

import operator
from collections.abc import Hashable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Self

import attrs

from .accessors import GetProperty
from .constants import CONGRUENT, IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL
from .errors import ERR_ARG, ERR_GROUP, ERR_RANK
from .errors import Exception as MPIException
from .handle import Handle, predefine

if TYPE_CHECKING:
    from .api.session import Session
    from .instance import Instance

__all__ = [
    "CONGRUENT",
    "GROUP_EMPTY",
    "GROUP_NULL",
    "IDENT",
    "SIMILAR",
    "UNEQUAL",
    "Group",
]


@attrs.frozen(eq=False)
class Members:
    """What a group handle refers to: the processes in rank order and the caller's identity."""

    procs: tuple[Hashable, ...]
    local: Hashable | None
    predefined: bool = False
    #: The MPI instance the processes belong to (where a communicator over them is built:
    #: ``Intracomm.Create_from_group``); None for groups made outside any instance.
    instance: Instance | None = None
    #: The session a process-set group came from (its communicators use the session's
    #: buffered-send buffer); None for groups of the world model.
    session: Any = None
    #: Process identifier -> rank in this group.
    ranks: dict[Hashable, int] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        ranks = {proc: rank for rank, proc in enumerate(self.procs)}
        if len(ranks) != len(self.procs):
            twice = sorted({repr(p) for p in self.procs if self.procs.count(p) > 1})
            raise ValueError(f"a group lists each process once; repeated: {', '.join(twice)}")
        object.__setattr__(self, "ranks", ranks)


class Group(Handle, referent="_members"):
    """Group of processes."""

    __slots__ = ("_members",)

    _members: Members | None

    @classmethod
    def from_procs(
        cls, procs: Iterable[Hashable], local: Hashable | None, instance: Instance | None = None
    ) -> Group:
        """A group of ``procs`` in rank order, seen from the process ``local`` of ``instance``.

        This is how communicators and process sets make their groups; programs use Incl,
        Union and friends.
        """
        procs = tuple(procs)
        if not procs:
            return cls._of(_EMPTY)  # a new handle to the empty group, as MPI's calls give
        return cls._of(Members(procs, local, instance=instance))

    @classmethod
    def Create_from_session_pset(cls, session: Session, pset_name: str) -> Self:
        """Create a new group from session and process set."""
        from .api.session import pset_group  # the API builds on groups

        return pset_group(session, pset_name, cls, "Group.Create_from_session_pset")

    @classmethod
    def _of(cls, members: Members) -> Group:
        group = cls.__new__(cls)
        group._members = members
        return group

    # -- handle semantics (equality, hash, truth, pickling, integers come from Handle) ---

    def _instance_for_handles(self) -> Any:
        members = self._members
        if members is not None and members.instance is not None:
            return members.instance
        return super()._instance_for_handles()

    def __repr__(self) -> str:
        if self._members is None:
            return "<Group GROUP_NULL>"
        if self._members is _EMPTY:
            return "<Group GROUP_EMPTY>"
        return f"<Group size={len(self._members.procs)} rank={self.Get_rank()}>"

    @property
    def members(self) -> Members:
        """What the handle refers to; an MPI error with ``ERR_GROUP`` for ``GROUP_NULL``."""
        members = self._members
        if members is None:
            raise MPIException(ERR_GROUP, "the group is GROUP_NULL (a null or freed group)")
        return members

    @property
    def procs(self) -> tuple[Hashable, ...]:
        """The process identifiers in rank order (an ompy extension)."""
        return self.members.procs

    # -- size and rank ----------------------------------------------------------------------------

    def Get_size(self) -> int:
        """Return the number of processes in a group."""
        return len(self.members.procs)

    def Get_rank(self) -> int:
        """Return the rank of this process in a group (``UNDEFINED`` if not a member)."""
        members = self.members
        return members.ranks.get(members.local, UNDEFINED)

    size = GetProperty(Get_size, "Number of processes.")
    rank = GetProperty(Get_rank, "Rank of this process.")

    # -- comparison and translation -------------------------------------------------------------

    def Translate_ranks(
        self, ranks: Sequence[int] | None = None, group: Group | None = None
    ) -> list[int]:
        """Translate ranks in a group to those in another group.

        ``ranks`` defaults to every rank of this group and ``group`` to the group of
        ``COMM_WORLD``.  A rank with no counterpart becomes ``UNDEFINED``; ``PROC_NULL`` stays
        ``PROC_NULL``.  Called on the class, ``Group.Translate_ranks(g1, ranks1, g2)`` works too.
        """
        members = self.members
        if group is None:
            group = _world_group()
        other = _checked(group, "Translate_ranks").members
        if ranks is None:
            ranks = range(len(members.procs))
        result = []
        for rank in _rank_list(ranks, "Translate_ranks"):
            if rank == PROC_NULL:
                result.append(PROC_NULL)
                continue
            _check_rank(rank, members, "Translate_ranks")
            result.append(other.ranks.get(members.procs[rank], UNDEFINED))
        return result

    def Compare(self, group: Group) -> int:
        """Compare two groups: ``IDENT`` (same order), ``SIMILAR`` (same members) or ``UNEQUAL``.

        Called on the class, ``Group.Compare(g1, g2)`` works too.
        """
        mine = self.members
        theirs = _checked(group, "Compare").members
        if mine is theirs or mine.procs == theirs.procs:
            return IDENT
        if len(mine.procs) == len(theirs.procs) and mine.ranks.keys() == theirs.ranks.keys():
            return SIMILAR
        return UNEQUAL

    # -- set operations ---------------------------------------------------------------------------

    @classmethod
    def Union(cls, group1: Group, group2: Group) -> Group:
        """Create a new group from the union of two existing groups."""
        first = _checked(group1, "Union").members
        second = _checked(group2, "Union").members
        extra = [proc for proc in second.procs if proc not in first.ranks]
        return _derived(cls, first.procs + tuple(extra), first, second)

    @classmethod
    def Intersection(cls, group1: Group, group2: Group) -> Group:
        """Create a new group from the intersection of two existing groups."""
        first = _checked(group1, "Intersection").members
        second = _checked(group2, "Intersection").members
        procs = tuple(proc for proc in first.procs if proc in second.ranks)
        return _derived(cls, procs, first, second)

    #: mpi4py's other name for :meth:`Intersection`.
    Intersect = Intersection

    @classmethod
    def Difference(cls, group1: Group, group2: Group) -> Group:
        """Create a new group from the difference of two existing groups."""
        first = _checked(group1, "Difference").members
        second = _checked(group2, "Difference").members
        procs = tuple(proc for proc in first.procs if proc not in second.ranks)
        return _derived(cls, procs, first, second)

    def Incl(self, ranks: Sequence[int]) -> Group:
        """Create a new group by including the listed members, in the order listed."""
        members = self.members
        chosen = _distinct_ranks(_rank_list(ranks, "Incl"), members, "Incl")
        return _derived(type(self), tuple(members.procs[rank] for rank in chosen), members)

    def Excl(self, ranks: Sequence[int]) -> Group:
        """Create a new group by excluding the listed members."""
        members = self.members
        dropped = set(_distinct_ranks(_rank_list(ranks, "Excl"), members, "Excl"))
        procs = tuple(proc for rank, proc in enumerate(members.procs) if rank not in dropped)
        return _derived(type(self), procs, members)

    def Range_incl(self, ranks: Sequence[tuple[int, int, int]]) -> Group:
        """Create a new group by including ranges of members: (first, last, stride) triplets."""
        members = self.members
        chosen = _distinct_ranks(_expand_ranges(ranks, "Range_incl"), members, "Range_incl")
        return _derived(type(self), tuple(members.procs[rank] for rank in chosen), members)

    def Range_excl(self, ranks: Sequence[tuple[int, int, int]]) -> Group:
        """Create a new group by excluding ranges of members: (first, last, stride) triplets."""
        members = self.members
        dropped = set(_distinct_ranks(_expand_ranges(ranks, "Range_excl"), members, "Range_excl"))
        procs = tuple(proc for rank, proc in enumerate(members.procs) if rank not in dropped)
        return _derived(type(self), procs, members)

    # -- life cycle -------------------------------------------------------------------------------

    def Dup(self) -> Group:
        """Duplicate a group."""
        members = self.members
        if not members.procs:
            return type(self)._of(_EMPTY)
        return type(self)._of(
            Members(
                members.procs, members.local, instance=members.instance, session=members.session
            )
        )

    def Free(self) -> None:
        """Free a group."""
        self.members  # noqa: B018  (GROUP_NULL: an error)
        if self._constant():
            raise MPIException(ERR_GROUP, "GROUP_EMPTY is predefined and cannot be freed")
        self._members = None

    def _free(self) -> None:
        self.Free()


# -- helpers ---------------------------------------------------------------------------------------


def _checked(group: object, operation: str) -> Group:
    if not isinstance(group, Group):
        raise TypeError(f"{operation}: expecting a Group, not {type(group).__name__}")
    return group


def _derived(cls: type[Group], procs: tuple, *sources: Members) -> Group:
    if not procs:
        return cls._of(_EMPTY)
    local = next((s.local for s in sources if s.local is not None), None)
    instance = next((s.instance for s in sources if s.instance is not None), None)
    session = next((s.session for s in sources if s.session is not None), None)
    return cls._of(Members(procs, local, instance=instance, session=session))


def _rank_list(ranks: Iterable[int], operation: str) -> list[int]:
    if isinstance(ranks, str | bytes) or not isinstance(ranks, Iterable):
        raise TypeError(f"{operation}: expecting a sequence of ranks, not {type(ranks).__name__}")
    try:
        return [operator.index(rank) for rank in ranks]
    except TypeError:
        raise TypeError(f"{operation}: every rank must be an int, got {ranks!r}") from None


def _check_rank(rank: int, members: Members, operation: str) -> None:
    if not 0 <= rank < len(members.procs):
        raise MPIException(
            ERR_RANK,
            f"{operation}: rank {rank} is not in a group of size {len(members.procs)} "
            f"(valid ranks are 0..{len(members.procs) - 1})",
        )


def _distinct_ranks(ranks: list[int], members: Members, operation: str) -> list[int]:
    seen: set[int] = set()
    for rank in ranks:
        _check_rank(rank, members, operation)
        if rank in seen:
            raise MPIException(ERR_RANK, f"{operation}: rank {rank} is listed more than once")
        seen.add(rank)
    return ranks


def _expand_ranges(triplets: Iterable, operation: str) -> list[int]:
    if not isinstance(triplets, Iterable):
        raise TypeError(
            f"{operation}: expecting a sequence of (first, last, stride) triplets, "
            f"not {type(triplets).__name__}"
        )
    ranks: list[int] = []
    for triplet in triplets:
        try:
            first, last, stride = (operator.index(value) for value in triplet)
        except (TypeError, ValueError):
            raise TypeError(
                f"{operation}: each range must be a (first, last, stride) triplet of ints, "
                f"got {triplet!r}"
            ) from None
        if stride == 0:
            raise MPIException(ERR_ARG, f"{operation}: the stride of {triplet!r} is zero")
        if (last - first) * stride < 0:
            raise MPIException(
                ERR_ARG,
                f"{operation}: the stride of {triplet!r} goes away from the last rank "
                f"(use a {'negative' if first > last else 'positive'} stride)",
            )
        ranks.extend(range(first, last + (1 if stride > 0 else -1), stride))
    return ranks


_EMPTY: Final = Members((), None, predefined=True)

#: The null group handle (registered first: null handles pickle as it).
GROUP_NULL: Final = predefine(Group(), "GROUP_NULL", 0)
#: The group without members.
GROUP_EMPTY: Final = predefine(Group._of(_EMPTY), "GROUP_EMPTY", 1)


def _world_group() -> Group:
    from .instance import default  # the instance module builds on groups

    instance = default()
    if instance is None:
        raise MPIException(
            ERR_GROUP,
            "Translate_ranks without a target group translates into the group of COMM_WORLD, "
            "which does not exist before MPI is initialized; pass the target group",
        )
    return instance.world_group
