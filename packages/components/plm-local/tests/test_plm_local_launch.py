"""The local launcher starts each rank as a child of the launcher, in its own session, with
exactly the environment and working directory it is given, and reports how it ended."""

from __future__ import annotations

import json
import os
import signal
import socket

import pytest

from ompy.mca.plm.local import LocalPlmComponent
from ompy.mca.plm.local.launcher import LocalPlmModule
from ompy.opal.mca.params import Registry
from ompy.opal.readiness import readable
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.job import Node
from ompy.orte.mca.plm.base import select_plm

from .conftest import MARKER, python, read_line, wait_exit

pytestmark = pytest.mark.timeout(30)

REPORT = """
import json, os
print(json.dumps({
    "pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "pgid": os.getpgid(0),
    "cwd": os.getcwd(), "env": dict(os.environ),
}), flush=True)
"""


def test_the_component_offers_the_local_launcher_for_any_nodes():
    component = LocalPlmComponent(Registry(environ={}, files=[]))
    component.register_params()
    component.open()
    offer = component.query([Node("elsewhere.example", 2)])
    assert offer is not None and offer.priority == 10
    assert isinstance(offer.module, LocalPlmModule)


def test_the_plm_framework_selects_it_when_asked_for_by_name():
    registry = Registry(environ={"OMPY_MCA_plm": "local"}, files=[])
    opened, module = select_plm(registry, [Node("localhost", 1)])
    try:
        assert isinstance(module, LocalPlmModule)
    finally:
        opened.close()


@pytest.mark.parametrize(
    "name", ["localhost", "127.0.0.1", "::1", socket.gethostname(), " LOCALHOST "]
)
def test_names_of_this_host_are_reachable(name):
    LocalPlmModule().check_nodes([Node(name, 1)])


def test_other_hosts_are_refused_by_name():
    nodes = [Node("localhost", 2), Node("n1.example", 2), Node("n2", 2)]
    with pytest.raises(LaunchError, match=r"cannot start ranks on 'n1.example', 'n2'") as caught:
        LocalPlmModule().check_nodes(nodes)
    assert "this host only" in str(caught.value)
    assert caught.value.exit_code == 1


def test_each_rank_gets_its_environment_and_directory_and_leads_its_own_session(spawner, tmp_path):
    os.environ["OMPY_PLM_LOCAL_NOT_PASSED"] = "launcher only"
    try:
        started = []
        for rank in range(3):
            directory = tmp_path / f"rank{rank}"
            directory.mkdir()
            env = {"WHO": f"rank {rank}"}
            started.append(spawner.spawn_reporting(REPORT, rank=rank, env=env, cwd=directory))
    finally:
        del os.environ["OMPY_PLM_LOCAL_NOT_PASSED"]
    for rank, (process, read_end) in enumerate(started):
        report = json.loads(read_line(read_end))
        os.close(read_end)
        assert process.rank == rank
        assert report["pid"] == process.pid
        assert report["ppid"] == os.getpid()
        assert report["sid"] == report["pgid"] == process.pid
        assert report["cwd"] == str(tmp_path / f"rank{rank}")
        # Exactly what was given: nothing of the launcher's own environment leaks in.
        # (Python itself may add LC_CTYPE at start-up, PEP 538.)
        env = {k: v for k, v in report["env"].items() if k != "LC_CTYPE"}
        assert env == {MARKER: spawner.token, "WHO": f"rank {rank}"}
        assert wait_exit(process) == 0


def test_a_rank_inherits_no_descriptor_of_the_launcher_but_its_stdio(spawner):
    """Otherwise a rank would hold other ranks' output pipes open, and their end never come."""
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    try:
        rank = spawner.spawn(
            python(
                f"import os, sys\ntry: os.fstat({write_end})\nexcept OSError: sys.exit(0)\n"
                "sys.exit(1)"
            )
        )
    finally:
        os.close(read_end)
        os.close(write_end)
    assert wait_exit(rank) == 0


@pytest.mark.parametrize("code", [0, 1, 3, 255])
def test_the_exit_code_is_reported(spawner, code):
    assert wait_exit(spawner.spawn(python(f"raise SystemExit({code})"))) == code


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSEGV, signal.SIGTERM])
def test_death_by_a_signal_is_reported_as_minus_the_signal_number(spawner, signum):
    rank = spawner.spawn(python(f"import os; os.kill(os.getpid(), {int(signum)})"))
    assert wait_exit(rank) == -signum


def test_the_exit_fd_becomes_readable_only_when_the_rank_exits(spawner):
    rank, read_end = spawner.spawn_reporting("import time; print('up', flush=True); time.sleep(60)")
    try:
        assert read_line(read_end) == "up\n"
        fd = rank.exit_fd()
        assert fd is not None
        assert readable([fd], 0.2) == []
        assert rank.poll() is None
        rank.signal(signal.SIGTERM)
        assert wait_exit(rank) == -signal.SIGTERM
    finally:
        os.close(read_end)


def test_release_closes_the_exit_fd_and_may_be_repeated(spawner):
    rank = spawner.spawn(python("pass"))
    fd = rank.exit_fd()
    assert wait_exit(rank) == 0
    rank.release()
    rank.release()
    assert rank.exit_fd() is None
    with pytest.raises(OSError):
        os.fstat(fd)
