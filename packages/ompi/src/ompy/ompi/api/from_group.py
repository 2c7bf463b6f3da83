"""Communicators without a parent: ``Intracomm.Create_from_group`` and ``Comm.Create_group``.

``Create_from_group`` is collective over the members of a group and nothing else: there is no
parent communicator whose traffic could carry the context-id agreement (:mod:`.cid`), and
``Comm.Create_group`` is called by the group's members only, so the parent cannot carry it
either.  The members talk over a *rendezvous channel* instead:

- Every instance has one channel: a communicator over every world rank with the reserved
  context id ``pml.max_contextid`` (agreement hands ids out from the bottom, and the channel's
  id sits in ``instance.cids`` so agreement never hands it out).  It is registered with the PML
  on first use and lives as long as the instance; no collective framework runs on it.
- A peer may send on the channel before this process has registered it.  The PML keeps
  messages for a context id it does not know yet and delivers them once the id is added (ob1
  holds the headers per context id and replays them in ``add_comm``; the loopback PML of the
  tests creates a communicator's queue on demand), so nothing is lost.  The same holds for the
  new communicator itself: a fast member may send on it before a slow one has built it.
- Each call has a *key* every member computes alike: the stringtag and the group's world ranks
  (``Comm.Create_group``: the parent's context id, the tag and the world ranks).  Every message
  carries its key, and its tag is a CRC of the key, so a call receives from one member at a
  time on its own tag.  A message it takes that belongs to another call (two keys can share a
  CRC, and calls made by several threads of one process reach the channel in any order) is set
  aside in the instance's :class:`Rendezvous` mailbox, per key and sender in arrival order,
  where the call it belongs to looks first.  Two concurrent calls on overlapping groups
  therefore never take each other's messages, whatever their keys hash to.
- Over that exchange the members run an allgather through the group's first member, and with
  it the context-id agreement of :mod:`.cid`.  Each then builds the communicator, registered
  with the PML before it returns.
- Calls with the same key (same stringtag and group) follow one another on every member (MPI
  requires distinct stringtags for concurrent calls on overlapping groups).  Messages between
  two processes on one tag do not overtake each other, and a call consumes exactly the messages
  it was sent (each allgather: one message from every member to the first, one back), so the
  k-th call with a key takes the k-th call's messages.
- Calls from several threads at once (``THREAD_MULTIPLE``) run their agreements side by side:
  :mod:`.cid` reserves candidates under the MPI lock and orders the agreements by a priority
  every member computes alike (here: the key, after every agreement over a parent).
"""

from __future__ import annotations

import pickle
import threading
import zlib
from collections import deque
from collections.abc import Hashable
from typing import Any

import attrs

from ..errors import ERR_ARG, ERR_GROUP, ERR_INTERN
from ..errors import Exception as MPIException
from ..group import Group
from ..instance import Instance, current
from .cid import agree
from .communicator import Communicator
from .pickled import byte_spec
from .transfers import STANDARD, raise_if_failed, wait

#: The longest stringtag ``Create_from_group`` takes (``MPI_MAX_STRINGTAG_LEN``, Open MPI's value).
MAX_STRINGTAG_LEN = 1024


@attrs.define(eq=False)
class Rendezvous:
    """An instance's rendezvous channel and the messages set aside on it (module docstring)."""

    instance: Instance
    channel: Communicator | None = None
    #: (key, sender's world rank) -> values that arrived for that key, oldest first.
    mailbox: dict[tuple[Hashable, int], deque[Any]] = attrs.field(factory=dict)
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def open(self) -> Communicator:
        """The channel, registered with the PML on first use."""
        with self.lock:
            channel = self.channel
            if channel is None:
                instance = self.instance
                cid = instance.pml.max_contextid
                if cid in instance.cids:
                    raise MPIException(
                        ERR_INTERN,
                        f"the rendezvous context id {cid} is taken by a communicator; free "
                        "communicators that are no longer used",
                    )
                world = tuple(range(instance.world_size))
                channel = Communicator(instance, cid, world, "ompy rendezvous channel")
                instance.cids.add(cid)
                instance.pml.add_comm(channel)
                self.channel = channel
            return channel

    def take(self, channel: Communicator, key: Hashable, tag: int, source: int) -> tuple[bool, Any]:
        """(True, the next value ``source`` sent for ``key``), or (False, None) if none is here."""
        with self.lock:
            waiting = self.mailbox.get((key, source))
            if waiting:
                value = waiting.popleft()
                if not waiting:
                    del self.mailbox[(key, source)]
                return True, value
            pml = channel.pml
            while True:
                message = pml.improbe(source, tag, channel)
                if message is None:
                    return False, None
                data = bytearray(message.count)
                request = pml.imrecv(byte_spec(memoryview(data)), message)
                wait(channel, request)
                raise_if_failed(request)
                their_key, value = pickle.loads(data)
                if their_key == key:
                    return True, value
                self.mailbox.setdefault((their_key, source), deque()).append(value)


@attrs.define(eq=False)
class Exchange:
    """One call's conversation with the other members of its group, over the channel."""

    rendezvous: Rendezvous
    key: Hashable
    #: The members' world ranks in group order; the first gathers and answers.
    members: tuple[int, ...]
    channel: Communicator = attrs.field(init=False)
    tag: int = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.channel = self.rendezvous.open()
        crc = zlib.crc32(repr(self.key).encode())
        self.tag = crc % (self.channel.pml.max_tag + 1)

    def send(self, dest: int, value: Any) -> None:
        channel = self.channel
        data = memoryview(pickle.dumps((self.key, value)))
        request = channel.pml.isend(byte_spec(data), dest, self.tag, channel, STANDARD)
        wait(channel, request)
        raise_if_failed(request)

    def recv(self, source: int) -> Any:
        found: list[Any] = []

        def arrived() -> bool:
            here, value = self.rendezvous.take(self.channel, self.key, self.tag, source)
            if here:
                found.append(value)
            return here

        self.channel.engine.wait_until(arrived)
        return found[0]

    def allgather(self, value: Any) -> list[Any]:
        """Every member's ``value``, in group order, on every member."""
        first, *others = self.members
        if not others:
            return [value]
        if self.channel.rank != first:
            self.send(first, value)
            return self.recv(first)
        values = [value] + [self.recv(member) for member in others]
        for member in others:
            self.send(member, values)
        return values


def agree_over(instance: Instance, key: Hashable, members: tuple[int, ...]) -> int:
    """A context id agreed with ``members`` (world ranks) over the channel, for call ``key``."""
    exchange = Exchange(instance.rendezvous, key, members)
    return agree(instance, exchange.allgather, priority=(1, repr(key)))


def members_of(
    group: object, call: str, instance: Instance | None = None
) -> tuple[Instance, tuple[int, ...]]:
    """The instance (the group's, unless given) and world ranks of ``group``, with the caller."""
    if not isinstance(group, Group):
        raise TypeError(f"{call}: expecting a Group, not {type(group).__name__}")
    members = group.members
    if not members.procs:
        raise MPIException(ERR_GROUP, f"{call}: the group is empty")
    if instance is None:
        instance = members.instance if members.instance is not None else current(call)
    size = instance.world_size
    procs = tuple(p for p in members.procs if type(p) is int and 0 <= p < size)
    if len(procs) != len(members.procs):
        raise MPIException(
            ERR_GROUP, f"{call}: the group does not consist of processes of this MPI instance"
        )
    if instance.world_rank not in members.ranks:
        raise MPIException(
            ERR_GROUP,
            f"{call}: the calling process is not a member of the group; only members call it",
        )
    return instance, procs


def create_from_group(group: object, stringtag: object) -> Communicator:
    """``Intracomm.Create_from_group``: the communicator of ``group``'s members."""
    call = "Intracomm.Create_from_group"
    if not isinstance(stringtag, str):
        raise TypeError(f"{call}: stringtag must be a str, not {type(stringtag).__name__}")
    if len(stringtag) > MAX_STRINGTAG_LEN:
        raise MPIException(
            ERR_ARG,
            f"{call}: the stringtag is {len(stringtag)} characters long; at most "
            f"MAX_STRINGTAG_LEN ({MAX_STRINGTAG_LEN}) are allowed",
        )
    instance, procs = members_of(group, call)
    cid = agree_over(instance, ("Create_from_group", stringtag, procs), procs)
    name = f"MPI COMMUNICATOR {cid} FROM GROUP {stringtag!r}"
    communicator = Communicator.create(instance, cid, procs, name)
    if isinstance(group, Group):  # members_of checked it; this tells the type checker
        communicator.session = group.members.session
    return communicator


def create_group(parent: Communicator, group: object, tag: int) -> Communicator:
    """``Comm.Create_group``: called by the members of ``group``, a subgroup of ``parent``."""
    call = "Comm.Create_group"
    instance, procs = members_of(group, call, parent.instance)
    inside = set(parent.world_ranks)
    outside = [p for p in procs if p not in inside]
    if outside:
        raise MPIException(
            ERR_GROUP,
            f"{call}: the group holds processes outside the communicator (world ranks "
            f"{outside}); it must be a subgroup of comm.Get_group()",
        )
    cid = agree_over(instance, ("Create_group", parent.context_id, tag, procs), procs)
    name = f"MPI COMMUNICATOR {cid} CREATE_GROUP FROM {parent.context_id}"
    communicator = Communicator.create(instance, cid, procs, name)
    communicator.session = parent.session
    return communicator
