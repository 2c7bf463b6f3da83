"""--host lists and hostfiles become nodes with slots; mistakes name the file and line."""

from __future__ import annotations

import socket

import pytest

from ompy.mca.ras.hostfile.parse import HostfileRasModule, parse_host_list, parse_hostfile
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.job import Node
from ompy.orte.mca.ras import AllocationRequest


def test_host_list_entries_with_and_without_slots():
    assert parse_host_list(["a:2,b", "c:10"]) == [("a", 2), ("b", 1), ("c", 10)]


def test_hostfile_syntax_like_open_mpi(tmp_path):
    path = tmp_path / "hosts"
    path.write_text("# cluster\nn1 slots=4 max_slots=8\n\nn2   # one slot\nn1 slots=2\n")
    assert parse_hostfile(path) == [("n1", 4), ("n2", 1), ("n1", 2)]
    allocation = HostfileRasModule().allocate(AllocationRequest(hostfile=path))
    assert allocation.nodes == (Node("n1", 6), Node("n2", 1))
    assert allocation.source == f"hostfile {path}"


def test_names_of_this_machine_are_one_node():
    allocation = HostfileRasModule().allocate(
        AllocationRequest(hosts=("localhost:2", f"{socket.gethostname()}:1", "127.0.0.1"))
    )
    assert allocation.nodes == (Node(socket.gethostname(), 4),)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("n1 slots=zero\n", "hosts:1: slots must be a positive integer, got 'zero'"),
        ("n1\nn2 cpus=2\n", "hosts:2: unexpected 'cpus=2'"),
        ("# nothing\n", "lists no hosts"),
    ],
)
def test_hostfile_mistakes_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "hosts"
    path.write_text(text)
    with pytest.raises(LaunchError, match=message):
        parse_hostfile(path)


def test_no_request_leaves_the_default_allocation():
    assert HostfileRasModule().allocate(AllocationRequest()) is None


def test_host_and_hostfile_together_are_refused(tmp_path):
    with pytest.raises(LaunchError, match="cannot be combined"):
        HostfileRasModule().allocate(AllocationRequest(("a",), tmp_path / "h"))
