"""Communicators without a parent: ``Intracomm.Create_from_group`` and ``Comm.Create_group``.

Each loopback rank gets a session on its own instance (``session_on``); the members agree on a
context id over the instance's rendezvous channel, and only the group's members take part.
"""

import numpy as np
import pytest

from ompy.ompi.api import from_group
from ompy.ompi.api.comm import Intracomm
from ompy.ompi.api.session import session_on
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.errors import ERR_ARG, ERR_GROUP, ERR_TAG
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.group import GROUP_EMPTY, GROUP_NULL, Group


def _pset(world, name="mpi://WORLD"):
    return session_on(world._c.instance).Create_group(name)


def _ring(comm) -> list:
    """Each member sends its rank to the next and receives from the previous (point-to-point)."""
    out = np.zeros(1, dtype=np.int64)
    request = comm.Irecv(out, (comm.rank - 1) % comm.size, 3)
    comm.Send(np.array([comm.rank], dtype=np.int64), (comm.rank + 1) % comm.size, 3)
    request.Wait()
    return [int(out[0]), comm.allreduce(comm.rank)]


def test_a_communicator_from_the_world_process_set_works_like_comm_world():
    def body(world):
        comm = Intracomm.Create_from_group(_pset(world))
        ring = _ring(comm)
        alone = Intracomm.Create_from_group(_pset(world, "mpi://SELF"), "alone")
        return (
            type(comm) is Intracomm,
            comm.rank,
            comm.size,
            comm._c.context_id,
            ring,
            alone.size,
            alone.allreduce(world.rank),
        )

    results = run_ranks(make_world(4), body)
    assert {r[3] for r in results} == {results[0][3]}, "one context id on every member"
    assert results[0][3] not in (0, 1), "0 and 1 are COMM_WORLD's and COMM_SELF's"
    for rank, (is_intra, crank, size, _cid, ring, alone, mine) in enumerate(results):
        assert (is_intra, crank, size, alone, mine) == (True, rank, 4, 1, rank)
        assert ring == [(rank - 1) % 4, 6]


def test_concurrent_calls_on_overlapping_groups_with_different_tags_keep_apart():
    # Rank 1 builds "left" first and "right" second, while rank 2 starts "right" at once: its
    # messages reach rank 1 during "left" and must wait for "right".  Ranks 3 and 4 meanwhile
    # build communicators of their own.
    def body(world):
        group = _pset(world)
        made = {}
        if world.rank in (0, 1):
            made["left"] = Intracomm.Create_from_group(group.Incl([0, 1]), "left")
        if world.rank in (1, 2):
            made["right"] = Intracomm.Create_from_group(group.Incl([2, 1]), "right")
        if world.rank in (3, 4):
            made["pair"] = Intracomm.Create_from_group(group.Incl([3, 4]), "left")
        return {name: (c.rank, c.size, c._c.context_id, _ring(c)) for name, c in made.items()}

    results = run_ranks(make_world(5), body)
    assert results[0]["left"][:2] == (0, 2) and results[1]["left"][:2] == (1, 2)
    assert results[2]["right"][:2] == (0, 2) and results[1]["right"][:2] == (1, 2)
    assert results[3]["pair"][:2] == (0, 2) and results[4]["pair"][:2] == (1, 2)
    assert results[0]["left"][2] == results[1]["left"][2]
    assert results[1]["right"][2] == results[2]["right"][2] != results[1]["left"][2]
    for made in results:
        for rank, size, _cid, (previous, total) in made.values():
            assert previous == (rank - 1) % size and total == size * (size - 1) // 2


def test_keys_with_the_same_channel_tag_are_told_apart_by_the_key(monkeypatch):
    monkeypatch.setattr(from_group.zlib, "crc32", lambda data: 7)  # every key on one tag

    def body(world):
        group = _pset(world)
        comms = []
        if world.rank in (0, 1):
            comms.append(Intracomm.Create_from_group(group.Incl([0, 1]), "a"))
        comms.append(Intracomm.Create_from_group(group, "b"))
        if world.rank in (1, 2):
            comms.append(Intracomm.Create_from_group(group.Incl([1, 2]), "c"))
        return [(c.size, _ring(c)[1]) for c in comms]

    results = run_ranks(make_world(3), body)
    assert results == [[(2, 1), (3, 3)], [(2, 1), (3, 3), (2, 1)], [(3, 3), (2, 1)]]


def test_the_same_tag_and_group_twice_gives_two_communicators():
    def body(world):
        group = _pset(world)
        first = Intracomm.Create_from_group(group)
        second = Intracomm.Create_from_group(group)
        if world.rank == 0:
            second.send("second", 1)
            first.send("first", 1)
            return None
        return first.recv(source=0), second.recv(source=0), first._c.context_id

    results = run_ranks(make_world(2), body)
    assert results[1][:2] == ("first", "second")


def test_a_subset_builds_while_the_others_do_something_else():
    def body(world):
        if world.rank in (0, 2):
            comm = Intracomm.Create_from_group(_pset(world).Incl([2, 0]), "subset")
            return comm.rank, comm.bcast("from world rank 2" if comm.rank == 0 else None)
        return world.rank, world.Get_group().Get_size()  # no part in it

    assert run_ranks(make_world(3), body) == [
        (1, "from world rank 2"),
        (1, 3),
        (0, "from world rank 2"),
    ]


def test_the_channel_is_registered_once_with_the_reserved_context_id():
    def body(world):
        instance = world._c.instance
        assert instance.rendezvous.channel is None, "nothing registered before the first call"
        Intracomm.Create_from_group(_pset(world), "one")
        channel = instance.rendezvous.channel
        Intracomm.Create_from_group(_pset(world), "two")
        assert instance.rendezvous.channel is channel and not instance.rendezvous.mailbox
        return (
            channel.context_id == instance.pml.max_contextid and channel.context_id in instance.cids
        )

    assert run_ranks(make_world(2), body) == [True, True]


def test_comm_create_group_is_called_by_the_members_only():
    def body(world):
        made = {}
        if world.rank in (0, 2):
            made["even"] = world.Create_group(world.Get_group().Incl([0, 2]), tag=5)
        if world.rank in (1, 2):
            made["upper"] = world.Create_group(world.Get_group().Incl([1, 2]), tag=6)
        return {name: (c.size, _ring(c)) for name, c in made.items()}

    results = run_ranks(make_world(3), body)
    assert results[0] == {"even": (2, [1, 1])}
    assert results[1] == {"upper": (2, [1, 1])}
    assert results[2] == {"even": (2, [0, 1]), "upper": (2, [0, 1])}


def test_bad_arguments_are_refused_before_anything_is_sent():
    (world,) = make_world(1)
    other_world = make_world(2)
    group = _pset(world)

    def refused(error_class, call, *args, **kwargs):
        with pytest.raises(MPIException) as info:
            call(*args, **kwargs)
        assert info.value.Get_error_class() == error_class, info.value
        return str(info.value)

    assert "empty" in refused(ERR_GROUP, Intracomm.Create_from_group, GROUP_EMPTY)
    assert "GROUP_NULL" in refused(ERR_GROUP, Intracomm.Create_from_group, GROUP_NULL)
    outsider = _pset(other_world[1]).Incl([0])  # world rank 0 of another process
    assert "not a member" in refused(ERR_GROUP, Intracomm.Create_from_group, outsider)
    strangers = Group.from_procs(["a", "b"], "a", world._c.instance)
    assert "processes of this MPI instance" in refused(
        ERR_GROUP, Intracomm.Create_from_group, strangers
    )
    assert "MAX_STRINGTAG_LEN" in refused(ERR_ARG, Intracomm.Create_from_group, group, "x" * 1025)
    refused(ERR_TAG, world.Create_group, world.Get_group(), -1)
    alone = Intracomm.Create_from_group(_pset(other_world[0], "mpi://SELF"))  # no peer needed
    wider = _pset(other_world[0])
    assert "outside the communicator" in refused(ERR_GROUP, alone.Create_group, wider, 0)
    with pytest.raises(TypeError, match="expecting a Group"):
        Intracomm.Create_from_group(world)
    with pytest.raises(TypeError, match="stringtag must be a str"):
        Intracomm.Create_from_group(group, 5)
    with pytest.raises(TypeError, match="info must be an Info"):
        Intracomm.Create_from_group(group, info="hint")
    assert world._c.instance.rendezvous.channel is None


@pytest.mark.parametrize("one_tag", [False, True], ids=["own-tags", "one-tag"])
def test_a_message_for_another_call_waits_in_the_mailbox_for_its_call(monkeypatch, one_tag):
    # Calls of several threads of one process can interleave on the channel in any order;
    # here rank 0 sends for call "a" before call "b", and rank 1 asks for "b" first.
    if one_tag:
        monkeypatch.setattr(from_group.zlib, "crc32", lambda data: 7)

    def body(world):
        rendezvous = world._c.instance.rendezvous
        a, b = (from_group.Exchange(rendezvous, ("test", name), (0, 1)) for name in "ab")
        if world.rank == 0:
            for value in range(3):
                a.send(1, ("a", value))
            b.send(1, ("b", 0))
            return None
        first = b.recv(0)
        kept = {key: len(values) for key, values in rendezvous.mailbox.items()}
        return [first] + [a.recv(0) for _ in range(3)], kept, rendezvous.mailbox

    got, kept, left = run_ranks(make_world(2), body)[1]
    assert got == [("b", 0), ("a", 0), ("a", 1), ("a", 2)]
    # On one tag, "b" was found behind "a"'s messages, which waited in the mailbox; on their
    # own tags they waited in the PML.
    assert kept == ({(("test", "a"), 0): 3} if one_tag else {})
    assert left == {}
