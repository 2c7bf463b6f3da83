"""Dynamic processes at the API: the process table that names processes of other jobs, and
the argument checks of Spawn/Accept/Connect/names, in loopback worlds (no launcher)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy import MPI
from ompy.ompi.api.testing import default_instance, make_world, run_ranks
from ompy.ompi.proctable import ProcTable
from ompy.opal.proc import Proc


def world_procs(jobid: str, base: int, size: int) -> list[Proc]:
    return [Proc(jobid, base + r, node_id=0, node_name="h") for r in range(size)]


def test_world_ranks_keep_their_index_and_other_jobs_get_the_next_ones():
    table = ProcTable(world_procs("jb", 3, 2))  # a spawned job: universe ranks 3, 4
    assert [table.universe_rank(i) for i in range(2)] == [3, 4]
    parents = [Proc("ja", 0, node_name="h"), Proc("ja", 1, node_name="other")]
    indices, new = table.add_foreign(parents)
    assert indices == [2, 3] and new == parents
    again, new = table.add_foreign([parents[1], Proc("jb", 4, node_name="h")])
    assert again == [3, 1] and new == []  # known processes keep their index, none is new
    assert table.index_of(1) == 3 and table.index_of(7) is None
    assert (table.node_id_for("h"), table.node_id_for("other"), table.node_id_for("x")) == (0, 1, 2)


def test_a_universe_rank_cannot_name_two_processes():
    table = ProcTable(world_procs("ja", 0, 2))
    with pytest.raises(ValueError, match="universe rank 1, which already names"):
        table.add_foreign([Proc("jz", 1, node_name="h")])


class _Modex:
    def get(self, rank: int, key: str) -> str:
        return f"{key}@{rank}"


def test_the_table_reads_the_modex_by_universe_rank():
    table = ProcTable(world_procs("jb", 5, 2), _Modex())
    table.add_foreign([Proc("ja", 0, node_name="h")])
    assert [table.get(i, "arch") for i in range(3)] == ["arch@5", "arch@6", "arch@0"]


@given(st.lists(st.integers(0, 30), unique=True, max_size=12), st.integers(0, 10))
def test_indices_are_dense_and_translate_both_ways(ranks, base):
    table = ProcTable(world_procs("jw", 100 + base, 3))
    indices, _new = table.add_foreign([Proc("jx", r, node_name="h") for r in ranks])
    assert indices == list(range(3, 3 + len(ranks)))
    assert [table.universe_rank(i) for i in indices] == ranks
    assert [table.index_of(r) for r in ranks] == indices


def test_without_a_launcher_ports_and_names_are_unsupported():
    with default_instance():
        for call in (
            MPI.Open_port,
            lambda: MPI.Close_port("p"),
            lambda: MPI.Publish_name("s", "p"),
            lambda: MPI.Lookup_name("s"),
        ):
            with pytest.raises(MPI.Exception) as raised:
                call()
            assert raised.value.Get_error_class() == MPI.ERR_UNSUPPORTED_OPERATION
            assert "need 'ompy run'" in str(raised.value)
        assert MPI.Comm.Get_parent() == MPI.COMM_NULL


def test_bad_arguments_are_refused_by_name():
    with default_instance():
        with pytest.raises(TypeError, match="service_name must be a str"):
            MPI.Publish_name(3, "p")
        with pytest.raises(MPI.Exception, match="port_name is empty"):
            MPI.Close_port("")


def test_a_python_error_of_the_root_is_an_mpi_error_of_the_others():
    worlds = make_world(2)

    def body(world):
        commands = "python" if world.rank == 0 else ["python"]  # only the root's count
        try:
            world.Spawn_multiple(commands)
        except ValueError as error:
            return "ValueError", str(error)
        except MPI.Exception as error:
            return error.Get_error_class(), str(error)
        return None

    root, other = run_ranks(worlds, body)
    assert root == (
        "ValueError",
        "Intracomm.Spawn_multiple: expecting a sequence of commands, not a single command",
    )
    assert other[0] == MPI.ERR_ARG and "expecting a sequence of commands" in other[1]


def test_a_spawn_the_root_refuses_raises_at_every_rank_of_the_group():
    worlds = make_world(3)

    def body(world):
        count = 0 if world.rank == 1 else 2  # only the root's arguments count
        with pytest.raises(MPI.Exception) as raised:
            world.Spawn("python", maxprocs=count, root=1)
        return raised.value.Get_error_class(), "maxprocs must be at least 1" in str(raised.value)

    assert run_ranks(worlds, body) == [(MPI.ERR_SPAWN, True)] * 3


def test_spawn_multiple_checks_that_its_lists_agree():
    worlds = make_world(1)

    def body(world):
        with pytest.raises(ValueError, match="expecting 2 items in maxprocs, got 1"):
            world.Spawn_multiple(["a", "b"], maxprocs=[1])
        with pytest.raises(ValueError, match="expecting 2 items in args, got 3"):
            world.Spawn_multiple(["a", "b"], args=[[], [], []])
        with pytest.raises(ValueError, match="expecting 2 items in info, got 1"):
            world.Spawn_multiple(["a", "b"], info=[MPI.INFO_NULL])
        with pytest.raises(ValueError, match="expecting a sequence of commands"):
            world.Spawn_multiple("a")
        with pytest.raises(MPI.Exception, match="root 3 is not a rank"):
            world.Accept("p", root=3)
        with pytest.raises(
            MPI.Exception, match=r"has no launcher \(dynamic processes need 'ompy run'\)"
        ):
            world.Connect("ompy-port:1:x")

    run_ranks(worlds, body)
