"""What a BTL learns about its peers: Proc identities and the modex implementations."""

from __future__ import annotations

import multiprocessing

import pytest

from ompy.opal.modex import DirectoryModex, InMemoryModex, Modex, ModexError
from ompy.opal.proc import Proc


def test_procs_compare_identity_and_placement():
    me = Proc("job1", 0, node_id=0, node_name="a")
    neighbour = Proc("job1", 1, node_id=0, node_name="a", local_rank=1)
    remote = Proc("job1", 2, node_id=1, node_name="b")
    assert me.same_process(Proc("job1", 0, node_id=0))
    assert not me.same_process(neighbour)
    assert not me.same_process(Proc("job2", 0))
    assert me.same_node(neighbour) and not me.same_node(remote)
    assert str(remote) == "rank 2 of job job1 on b"


@pytest.mark.parametrize("field", ["rank", "node_id", "local_rank"])
def test_negative_proc_numbers_are_refused_by_name(field):
    with pytest.raises(ValueError, match=f"Proc.{field}"):
        Proc("job", **{"rank": 0, field: -1})


def test_both_implementations_satisfy_the_modex_protocol(tmp_path):
    assert isinstance(InMemoryModex(), Modex)
    assert isinstance(DirectoryModex(tmp_path, 0, 1), Modex)


def test_in_memory_values_are_visible_after_commit():
    zero, one = InMemoryModex.group(2)
    zero.put("btl.tcp", b"addr0")
    with pytest.raises(ModexError, match="rank 0 published nothing"):
        one.get(0, "btl.tcp")
    zero.commit()
    assert one.get(0, "btl.tcp") == b"addr0"


def test_modex_values_must_be_bytes():
    with pytest.raises(ModexError, match="values are bytes"):
        InMemoryModex().put("key", "text")
    with pytest.raises(ModexError, match="non-empty strings"):
        InMemoryModex().put("", b"x")


def _publish(directory, rank, size):
    modex = DirectoryModex(directory, rank, size, timeout=20)
    modex.put("who", f"rank{rank}".encode())
    modex.fence()
    assert [modex.get(peer, "who") for peer in range(size)] == [
        f"rank{peer}".encode() for peer in range(size)
    ]


@pytest.mark.timeout(60)
def test_directory_modex_exchanges_values_between_processes(tmp_path):
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_publish, args=(tmp_path, r, 2)) for r in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert multiprocessing.active_children() == []


def test_directory_modex_fence_times_out_naming_missing_ranks(tmp_path):
    modex = DirectoryModex(tmp_path, 0, 3, timeout=0.1)
    with pytest.raises(ModexError, match=r"ranks \[1, 2\] never committed"):
        modex.fence()


def test_directory_modex_refuses_ranks_outside_the_job(tmp_path):
    with pytest.raises(ModexError, match="outside a job of size 2"):
        DirectoryModex(tmp_path, 2, 2)
    modex = DirectoryModex(tmp_path, 0, 2)
    with pytest.raises(ModexError, match="outside a job of size 2"):
        modex.get(5, "key")
    with pytest.raises(ModexError, match="has not committed"):
        modex.get(1, "key")
