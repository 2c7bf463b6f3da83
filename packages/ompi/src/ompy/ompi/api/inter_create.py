"""Building intercommunicators: ``Create_intercomm``, ``Create_from_groups``, and the new
communicators made from an intercommunicator (``Dup``, ``Split``, ``Create``, ``Merge``).

An intercommunicator joins two disjoint groups.  Its context id is agreed by the processes of
both groups (:mod:`.cid`), so that a message carrying it finds the same communicator on either
side; its private local communicator (``Communicator.local_comm``, the intracommunicator over
one group that its collectives use for their steps inside a group) gets its own id, agreed
within the group alone.

While it is being built, the two groups talk through their *leaders* (Open MPI's
``ompi_comm_nextcid`` over a bridge, as MPI describes ``MPI_Intercomm_create``): every group
member gathers inside its group, the leaders swap what their groups gathered, and each leader
broadcasts the other group's part inside its group.  A :class:`Bridge` is that path:

- for ``Create_intercomm`` the group is the caller's ``local_comm`` and the leaders talk on
  ``peer_comm`` with the caller's ``tag`` (MPI reserves it for this exchange);
- for a call on an existing intercommunicator the group is its local communicator, the
  leaders are rank 0 of each group and they talk on the intercommunicator itself on the
  reserved tag ``TAG_INTER`` (no user receive can take it).

Each leader sends before it receives and every exchange is one message each way, so the
leaders never wait on each other's send, and successive exchanges on one tag keep their order.
"""

from __future__ import annotations

import pickle
from typing import Any

import attrs

from ..constants import UNDEFINED
from ..errors import ERR_COMM, ERR_GROUP, ERR_RANK, ERR_TAG
from ..errors import Exception as MPIException
from ..group import CONGRUENT, SIMILAR, UNEQUAL, Group
from ..instance import Instance
from .cid import agree, agree_context_id, give_back
from .communicator import Communicator
from .from_group import agree_over, members_of
from .internal import allgather, bcast_bytes
from .pickled import byte_spec
from .tags import TAG_INTER
from .transfers import STANDARD, raise_if_failed, wait


@attrs.define(eq=False)
class Bridge:
    """The path between the two groups of an intercommunicator being built (module docstring)."""

    #: An intracommunicator over this process's group.
    local: Communicator
    #: The rank in ``local`` of this group's leader.
    leader: int
    #: Where the leaders talk (meaningful at the leader only).
    peer: Communicator | None
    #: The other leader's rank in ``peer``.
    remote_leader: int
    tag: int

    @classmethod
    def of(cls, inter: Communicator) -> Bridge:
        """The bridge of an existing intercommunicator: rank 0 of each group, on ``TAG_INTER``."""
        local = inter.local_comm
        if local is None:
            raise MPIException(ERR_COMM, f"{inter.name} is not an intercommunicator")
        return cls(local, 0, inter, 0, TAG_INTER)

    def exchange(self, value: Any, problem: tuple[int, str] | None = None) -> Any:
        """The other group's ``value`` (the leader's ``value`` is what its group sends).

        ``problem`` (the leader's: an error class and message) is raised by every member of
        the leader's group instead: the leader tells its group rather than the other leader,
        so no member of its group is left waiting.
        """
        data = None
        if self.local.rank == self.leader:
            if problem is not None:
                data = pickle.dumps((False, problem))
            else:
                assert self.peer is not None  # checked by the callers at the leader
                theirs = _swap(self.peer, self.remote_leader, self.tag, pickle.dumps(value))
                data = pickle.dumps((True, pickle.loads(theirs)))
        ok, answer = pickle.loads(bcast_bytes(self.local, data, self.leader))
        if not ok:
            raise MPIException(*answer)
        return answer

    def allgather(self, value: Any) -> tuple[list[Any], list[Any]]:
        """Every member's ``value``: this group's in rank order, and the other group's."""
        mine = allgather(self.local, value)
        return mine, self.exchange(mine)

    def gather(self, value: Any) -> list[Any]:
        """Every member's ``value`` in both groups (the allgather context-id agreement needs)."""
        mine, theirs = self.allgather(value)
        return mine + theirs


def _swap(comm: Communicator, peer: int, tag: int, data: bytes) -> memoryview:
    """Send ``data`` to ``peer`` on ``comm`` and receive what it sends (any length)."""
    sent = comm.pml.isend(byte_spec(memoryview(data)), peer, tag, comm, STANDARD)
    received = comm.pml.irecv_view(None, peer, tag, comm)
    wait(comm, received)
    raise_if_failed(received)
    wait(comm, sent)
    raise_if_failed(sent)
    assert received.view is not None  # a sized receive that completed has its buffer
    return received.view


def private_local(instance: Instance, cid: int, world_ranks: tuple[int, ...]) -> Communicator:
    """The local communicator of an intercommunicator: registered with the PML, no collectives.

    Only the intercommunicator's own collectives and constructors use it, point to point, so
    no coll selection is made for it (no segment or module per intercommunicator).
    """
    name = f"MPI COMMUNICATOR {cid} (LOCAL GROUP OF AN INTERCOMMUNICATOR)"
    comm = Communicator(instance, cid, world_ranks, name)
    with instance.engine.lock:
        instance.cids.add(cid)
        instance.pml.add_comm(comm)
    return comm


def _intercomm(
    instance: Instance,
    cid: int,
    local: Communicator,
    remote_world_ranks: tuple[int, ...],
    name: str,
) -> Communicator:
    return Communicator.create(
        instance,
        cid,
        local.world_ranks,
        name,
        remote_world_ranks=remote_world_ranks,
        local_comm=local,
    )


def _overlap_check(mine: tuple[int, ...], theirs: tuple[int, ...], call: str) -> None:
    both = sorted(set(mine) & set(theirs))
    if both:
        raise MPIException(
            ERR_COMM,
            f"{call}: the local and remote groups overlap (world ranks {both}); the two groups "
            "of an intercommunicator must be disjoint",
        )


def _order_key(mine: tuple[int, ...], theirs: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """The two groups in an order both compute alike (for the agreement's priority)."""
    return (mine, theirs) if mine < theirs else (theirs, mine)


# -- Create_intercomm ---------------------------------------------------------------------------


def create_intercomm(
    local_comm: Communicator,
    local_leader: int,
    peer_comm: Communicator | None,
    remote_leader: int,
    tag: int,
) -> Communicator:
    """``Intracomm.Create_intercomm``, collective over the local and the remote group."""
    call = "Intracomm.Create_intercomm"
    if not 0 <= local_leader < local_comm.size:
        raise MPIException(
            ERR_RANK,
            f"{call}: local_leader {local_leader} is not a rank of the local communicator of "
            f"size {local_comm.size}",
        )
    problem = None
    if local_comm.rank == local_leader:
        problem = _leader_problem(local_comm, peer_comm, remote_leader, tag, call)
    instance = local_comm.instance
    bridge = Bridge(local_comm, local_leader, peer_comm, remote_leader, tag)
    mine = tuple(local_comm.world_ranks)
    theirs: tuple[int, ...] = tuple(bridge.exchange(mine, problem))
    _overlap_check(mine, theirs, call)
    local_cid = agree_context_id(local_comm)
    local = private_local(instance, local_cid, mine)
    key = ("Create_intercomm", tag, _order_key(mine, theirs))
    cid = agree(instance, bridge.gather, priority=(1, repr(key)))
    name = f"MPI INTERCOMMUNICATOR {cid} FROM {local_comm.context_id}"
    inter = _intercomm(instance, cid, local, theirs, name)
    inter.session = local_comm.session
    inter.errhandler = local_comm.errhandler
    return inter


def _leader_problem(
    local_comm: Communicator,
    peer_comm: Communicator | None,
    remote_leader: int,
    tag: int,
    call: str,
) -> tuple[int, str] | None:
    """What is wrong with the leader's arguments of ``Create_intercomm`` (error class and
    message), or None."""
    if peer_comm is None:
        return ERR_COMM, f"{call}: the local leader needs a peer communicator, not COMM_NULL"
    if not 0 <= remote_leader < peer_comm.size:
        return ERR_RANK, (
            f"{call}: remote_leader {remote_leader} is not a rank of the peer communicator of "
            f"size {peer_comm.size}"
        )
    if peer_comm.world_ranks[remote_leader] in local_comm.world_ranks:
        return ERR_RANK, (
            f"{call}: the remote leader (rank {remote_leader} of the peer communicator) belongs "
            "to the local group; it must lead the other group (the groups must be disjoint)"
        )
    if not 0 <= tag <= peer_comm.tag_ub:
        return ERR_TAG, f"{call}: tag {tag} is not in 0..{peer_comm.tag_ub} (TAG_UB)"
    return None


def create_from_groups(
    local_group: object,
    local_leader: int,
    remote_group: object,
    remote_leader: int,
    stringtag: str,
) -> Communicator:
    """``Intercomm.Create_from_groups``: collective over the members of both groups only.

    There is no parent communicator, so the groups agree over the instance's rendezvous
    channel (:mod:`.from_group`), keyed by the stringtag and the two groups.
    """
    call = "Intercomm.Create_from_groups"
    if not isinstance(stringtag, str):
        raise TypeError(f"{call}: stringtag must be a str, not {type(stringtag).__name__}")
    instance, mine = members_of(local_group, call)
    if not isinstance(remote_group, Group):
        raise TypeError(f"{call}: expecting a Group, not {type(remote_group).__name__}")
    procs = tuple(remote_group.members.procs)
    if not procs:
        raise MPIException(ERR_GROUP, f"{call}: the remote group is empty")
    theirs = tuple(p for p in procs if type(p) is int and 0 <= p < instance.world_size)
    if len(theirs) != len(procs):
        raise MPIException(
            ERR_GROUP, f"{call}: the remote group does not consist of processes of this instance"
        )
    for what, leader, size in (
        ("local_leader", local_leader, len(mine)),
        ("remote_leader", remote_leader, len(theirs)),
    ):
        if not 0 <= leader < size:
            raise MPIException(
                ERR_RANK, f"{call}: {what} {leader} is not a rank of its group of size {size}"
            )
    _overlap_check(mine, theirs, call)
    pair = _order_key(mine, theirs)
    local_cid = agree_over(instance, ("Create_from_groups local", stringtag, mine), mine)
    local = private_local(instance, local_cid, mine)
    cid = agree_over(instance, ("Create_from_groups", stringtag, pair), pair[0] + pair[1])
    name = f"MPI INTERCOMMUNICATOR {cid} FROM GROUPS {stringtag!r}"
    inter = _intercomm(instance, cid, local, theirs, name)
    if isinstance(local_group, Group):
        inter.session = local_group.members.session
    return inter


# -- from an intercommunicator ------------------------------------------------------------------


def _derive(
    parent: Communicator,
    local_ranks: tuple[int, ...] | None,
    remote_ranks: tuple[int, ...] | None,
    how: str,
) -> Communicator | None:
    """A new intercommunicator of ``parent``'s processes: ``local_ranks`` (world ranks) with
    ``remote_ranks``, or None for a process outside it (either None, or an empty side).

    Every process of both groups calls it: the local id is agreed over the parent's local
    group, the intercommunicator's over both groups, and a process outside gives both back.
    """
    instance = parent.instance
    assert parent.local_comm is not None
    bridge = Bridge.of(parent)
    local_cid = agree_context_id(parent.local_comm)
    cid = agree(instance, bridge.gather, priority=(0, parent.context_id))
    if not local_ranks or not remote_ranks:
        give_back(instance, local_cid)
        give_back(instance, cid)
        return None
    local = private_local(instance, local_cid, local_ranks)
    name = f"MPI INTERCOMMUNICATOR {cid} {how} FROM {parent.context_id}"
    inter = _intercomm(instance, cid, local, remote_ranks, name)
    inter.session = parent.session
    inter.errhandler = parent.errhandler
    return inter


def dup(parent: Communicator) -> Communicator:
    """``Comm.Dup`` of an intercommunicator: the same two groups, new context ids."""
    new = _derive(parent, parent.world_ranks, parent.remote_world_ranks, "DUP")
    assert new is not None
    return new


def split(parent: Communicator, color: int, key: int) -> Communicator | None:
    """``Comm.Split`` of an intercommunicator: per color, its processes of each group (ordered
    by key, then by rank); None where the color is UNDEFINED or the other group has none."""
    mine, theirs = Bridge.of(parent).allgather((color, key))

    def chosen(pairs: list[tuple[int, int]], ranks: tuple[int, ...]) -> tuple[int, ...]:
        members = sorted((k, r) for r, (col, k) in enumerate(pairs) if col == color)
        return tuple(ranks[r] for _, r in members)

    if color == UNDEFINED:
        return _derive(parent, None, None, "SPLIT")
    return _derive(
        parent,
        chosen(mine, parent.world_ranks),
        chosen(theirs, parent.remote_world_ranks),
        "SPLIT",
    )


def create(parent: Communicator, group: Group, call: str) -> Communicator | None:
    """``Comm.Create`` of an intercommunicator: each group passes a subgroup of itself; the
    members of the two subgroups get an intercommunicator, the others None."""
    given = tuple(group.members.procs) if group.Get_size() else ()
    procs = tuple(p for p in given if type(p) is int and p in parent.world_ranks)
    outside = [p for p in given if p not in procs]
    if outside:
        raise MPIException(
            ERR_GROUP,
            f"{call}: the group holds processes outside the local group (world ranks "
            f"{outside}); on an intercommunicator each group passes a subgroup of itself",
        )
    theirs = tuple(Bridge.of(parent).exchange(procs))
    member = parent.instance.world_rank in procs
    return _derive(parent, procs if member else None, theirs, "CREATE")


def merge(parent: Communicator, high: bool) -> Communicator:
    """``Intercomm.Merge``: one intracommunicator of both groups, the group that passed
    ``high=False`` first (if both passed the same, the group holding the lower universe rank,
    which is the lower world rank within one job)."""
    instance = parent.instance
    bridge = Bridge.of(parent)
    mine, theirs = bridge.allgather(bool(high))
    local, remote = tuple(parent.world_ranks), tuple(parent.remote_world_ranks)
    my_high, their_high = mine[0], theirs[0]  # the leaders' choice binds each group
    # A tie is broken by universe ranks, which processes of different jobs agree on (their
    # indices for each other differ: ompy.ompi.proctable).
    table = instance.proc_table
    lowest = min(table.universe_rank(i) for i in local) < min(
        table.universe_rank(i) for i in remote
    )
    first = (not my_high) if my_high != their_high else lowest
    ranks = local + remote if first else remote + local
    cid = agree(instance, bridge.gather, priority=(0, parent.context_id))
    name = f"MPI COMMUNICATOR {cid} MERGE FROM {parent.context_id}"
    merged = Communicator.create(instance, cid, ranks, name)
    merged.session = parent.session
    merged.errhandler = parent.errhandler
    return merged


def compare(mine: Communicator, other: Communicator) -> int:
    """``Comm.Compare`` when either is an intercommunicator (IDENT is handled by the caller):
    CONGRUENT when both groups are the same in the same order, SIMILAR when both hold the same
    processes, else UNEQUAL (an intra- and an intercommunicator are UNEQUAL)."""
    if not (mine.is_inter and other.is_inter):
        return UNEQUAL
    if (
        mine.world_ranks == other.world_ranks
        and mine.remote_world_ranks == other.remote_world_ranks
    ):
        return CONGRUENT
    if set(mine.world_ranks) == set(other.world_ranks) and set(mine.remote_world_ranks) == set(
        other.remote_world_ranks
    ):
        return SIMILAR
    return UNEQUAL
