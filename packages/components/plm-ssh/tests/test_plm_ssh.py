"""The ssh plm module against a real ``ompy daemon`` on this host (no ssh needed).

A node that is this host gets its daemon started directly, through the same launch record,
connection, handshake and messages as a remote one; so spawning, output, exits, signals and
errors are tested here without root or sshd (the multi-host tests are in
``integration/multihost``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import attrs
import pytest

from ompy.mca.plm.ssh.component import SshPlmComponent
from ompy.mca.plm.ssh.launcher import SshPlmModule, SshSettings, agent_words
from ompy.opal.mca.params import Registry
from ompy.opal.readiness import readable
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.job import Node, Placement
from ompy.orte.mca.plm import SpawnRequest, Stdio

pytestmark = pytest.mark.timeout(60)
MARKER = "OMPY_PLM_SSH_TEST"
LOCAL = Node("localhost", 4)


def marked(token: str) -> list[int]:
    needle = f"{MARKER}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if needle in environ.split(b"\0"):
                found.append(int(entry))
    return found


#: What the fixture's ranks have in common (``prepare``); the tests parametrize it indirectly.
PROGRAM = [sys.executable, "-c", "import os; print(os.getppid())"]


@contextlib.contextmanager
def prepared(tmp_path: Path, program: list[str], common: dict[str, str] | None = None):
    """A module with a daemon for this host, prepared for ``program`` with the ranks' common
    environment (the launcher's, plus ``common``); afterwards nothing of it may remain."""
    token = secrets.token_hex(4)
    env = {**os.environ, MARKER: token, "TMPDIR": str(tmp_path), **(common or {})}
    os.environ[MARKER] = token  # the daemon inherits the launcher's environment
    module = SshPlmModule(
        SshSettings(("ssh",), sys.executable, "", 20.0, "plm_ssh_connect_timeout", fanout=4)
    )
    module.check_nodes([LOCAL])
    module.forward_environment({})
    module.prepare(program, env, Path.cwd())  # the cwd of start()
    module.env = env  # type: ignore[attr-defined]
    try:
        yield module
    finally:
        module.finish()
        del os.environ[MARKER]
    deadline = time.monotonic() + 10
    while marked(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not marked(token), "processes of the test survived it"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("ompy-daemon-")]


@pytest.fixture
def plm(tmp_path, request):
    """A prepared module with a daemon for this host; afterwards nothing of it may remain."""
    with prepared(tmp_path, getattr(request, "param", [])) as module:
        yield module


def start(plm, rank: int, argv: list[str]):
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    placement = Placement(rank, LOCAL, 0, rank, 4, False)
    stdio = Stdio(subprocess.DEVNULL, out_w, err_w)
    try:
        process = plm.spawn(placement, argv, plm.env, Path.cwd(), stdio)
    finally:
        os.close(out_w)  # as the iof module does once the rank started
        os.close(err_w)
    return process, out_r, err_r


def wait_exit(process, timeout: float = 10) -> int:
    ready = readable([process.exit_fd()], timeout)
    assert ready, "no exit reported"
    status = process.poll()
    assert status is not None
    return status


def read_all(fd: int) -> bytes:
    data = b""
    while chunk := os.read(fd, 65536):
        data += chunk
    os.close(fd)
    return data


def test_a_rank_runs_with_its_output_and_exit_status(plm):
    process, out, err = start(plm, 0, ["sh", "-c", "echo out $OMPY_T; echo err >&2; exit 3"])
    assert process.pid > 0
    assert wait_exit(process) == 3
    assert read_all(out) == b"out\n" and read_all(err) == b"err\n"
    assert process.starter_failure() is None
    process.release()


def test_large_output_is_forwarded_whole_while_other_ranks_start(plm):
    big = "import sys; sys.stdout.write('x' * 3_000_000)"
    first, out, err = start(plm, 0, [sys.executable, "-c", big])
    second, out2, err2 = start(plm, 1, ["true"])  # the pipe of rank 0 is full meanwhile
    assert len(read_all(out)) == 3_000_000
    assert wait_exit(first) == 0 and wait_exit(second) == 0
    for fd in (err, out2, err2):
        read_all(fd)


def test_signals_reach_the_rank_and_its_children(plm):
    process, out, err = start(plm, 0, ["sh", "-c", "sleep 30 & wait"])
    time.sleep(0.3)
    process.signal(signal.SIGTERM)
    assert wait_exit(process) == -signal.SIGTERM
    read_all(out), read_all(err)


def test_a_program_that_does_not_exist_is_127_naming_rank_and_host(plm):
    with pytest.raises(LaunchError, match=r"cannot start rank 2 on .*'/no/such/prog' was not "):
        start(plm, 2, ["/no/such/prog"])
    try:
        start(plm, 2, ["/no/such/prog"])
    except LaunchError as error:
        assert error.exit_code == 127


def test_a_killed_daemon_is_a_starter_failure_of_its_ranks(plm):
    process, out, err = start(plm, 0, ["sleep", "30"])
    daemon = plm._by_name["localhost"]
    assert daemon.process is not None
    daemon.process.kill()
    assert wait_exit(process) == -signal.SIGKILL
    failure = process.starter_failure()
    assert failure is not None and "the ompy daemon on localhost was lost" in failure.message
    read_all(out), read_all(err)


def test_the_component_offers_only_when_another_host_is_named():
    environ = {
        "OMPY_MCA_plm_ssh_agent": "ssh -F /cfg",
        "OMPY_MCA_plm_ssh_tree_fanout": "3",
    }
    component = SshPlmComponent(Registry(environ=environ, files=[]))
    component.register_params()
    assert component.query([LOCAL, Node("127.0.0.1", 1)]) is None
    offer = component.query([LOCAL, Node("elsewhere", 2)])
    assert offer is not None and offer.priority == 20
    assert offer.module.settings == SshSettings(
        ("ssh", "-F", "/cfg"),
        sys.executable,
        "",
        30.0,
        "plm_ssh_connect_timeout",
        local_daemon=False,
        fanout=3,
    )


def test_a_missing_remote_shell_is_named_before_launch():
    module = SshPlmModule(
        SshSettings(("no-such-ssh-xyz",), sys.executable, "", 1.0, "plm_ssh_connect_timeout")
    )
    with pytest.raises(LaunchError, match="remote shell 'no-such-ssh-xyz'"):
        module.check_nodes([LOCAL, Node("elsewhere", 1)])


def test_the_agent_parameter_splits_like_a_shell():
    assert agent_words("ssh -F '/a b/cfg' -o BatchMode=yes") == (
        "ssh",
        "-F",
        "/a b/cfg",
        "-o",
        "BatchMode=yes",
    )


def test_python_ranks_are_forked_from_the_nodes_fork_server(plm):
    program = [sys.executable, "-c", "import os; print(os.getppid())"]
    parents = []
    for rank in (0, 1):
        process, out, err = start(plm, rank, program)
        assert wait_exit(process) == 0
        parents.append(int(read_all(out)))
        read_all(err)
    daemon = plm._by_name["localhost"]
    assert parents[0] == parents[1] != daemon.pid  # one fork server, not the daemon
    stat = Path(f"/proc/{parents[0]}/stat").read_text()
    assert int(stat.rsplit(")", 1)[1].split()[1]) == daemon.pid  # the daemon's child


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def fork_servers(pid: int) -> list[int]:
    """The children of ``pid`` that run a fork server (once past their exec)."""
    found = []
    for child in children_of(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"forkserver.zygote" in cmdline or b"ompy fork server" in cmdline:
            found.append(child)
    return found


@pytest.mark.parametrize("plm", [PROGRAM], indirect=True)
def test_a_daemon_starts_its_fork_server_before_the_first_spawn(plm):
    """``prepare`` names the program: each daemon warms a fork server as soon as it is in,
    so the nodes import in parallel; the ranks are then forked from that very server."""
    daemon = plm._by_name["localhost"]
    deadline = time.monotonic() + 20
    while not (daemon.connected and fork_servers(daemon.pid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    servers = fork_servers(daemon.pid)
    assert len(servers) == 1, "no fork server was started before any rank was asked for"
    for rank in (0, 1):
        process, out, err = start(plm, rank, PROGRAM)
        assert wait_exit(process) == 0
        assert int(read_all(out)) == servers[0]
        read_all(err)


@pytest.mark.parametrize("plm", [[sys.executable, "-c", "pass"]], indirect=True)
def test_a_rank_that_does_not_fit_the_warmed_server_is_executed(plm):
    process, out, err = start(plm, 0, ["sh", "-c", "echo $PPID"])
    assert wait_exit(process) == 0
    assert int(read_all(out)) == plm._by_name["localhost"].pid  # the daemon ran it itself
    read_all(err)


@pytest.fixture
def own_plm(tmp_path):
    """A module whose launcher serves its own host (no daemon there), prepared for PROGRAM."""
    token = secrets.token_hex(4)
    env = {**os.environ, MARKER: token, "TMPDIR": str(tmp_path)}
    module = SshPlmModule(
        SshSettings(
            ("ssh",), sys.executable, "", 20.0, "plm_ssh_connect_timeout", local_daemon=False
        )
    )
    module.check_nodes([LOCAL])
    module.forward_environment({})
    module.prepare(PROGRAM, env, Path.cwd())
    module.env = env  # type: ignore[attr-defined]
    yield module
    module.finish()
    deadline = time.monotonic() + 10
    while marked(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not marked(token), "processes of the test survived it"


def test_the_launcher_forks_its_own_hosts_ranks_from_its_fork_server(own_plm):
    assert not own_plm._by_name, "no daemon for the launcher's own host"
    parents = []
    for rank in (0, 1):
        process, out, err = start(own_plm, rank, PROGRAM)
        assert wait_exit(process) == 0
        parents.append(int(read_all(out)))
        read_all(err)
    servers = fork_servers(os.getpid())
    assert parents[0] == parents[1] and parents == servers * 2  # this process's fork server


def test_own_host_ranks_that_do_not_fit_the_server_are_executed_with_their_status(own_plm):
    process, out, err = start(own_plm, 0, ["sh", "-c", "echo $PPID; exit 3"])
    assert wait_exit(process) == 3
    assert int(read_all(out)) == os.getpid()
    read_all(err)
    with pytest.raises(LaunchError, match="cannot start rank 1 on localhost") as caught:
        start(own_plm, 1, ["/no/such/program"])
    assert caught.value.exit_code == 127


# -- a job's ranks at once (spawn_all: one launch message per daemon) -------------------------

RANK_VARIABLE = "OMPY_PLM_SSH_TEST_RANK"


def requests_for(plm, programs: list[list[str]], token: str, drop: str = ""):
    """A request per program (rank = index), each with its own variable and without ``drop``;
    the write ends of their pipes, to close once the ranks started, and the read ends."""
    requests, ends, reads = [], [], []
    for rank, argv in enumerate(programs):
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        env = {k: v for k, v in plm.env.items() if k != drop}
        env[RANK_VARIABLE] = f"{token}-{rank}"
        stdio = Stdio(subprocess.DEVNULL, out_w, err_w)
        placement = Placement(rank, LOCAL, 0, rank, len(programs), False)
        requests.append(SpawnRequest(placement, argv, env, Path.cwd(), stdio))
        ends += [out_w, err_w]
        reads.append((out_r, err_r))
    return requests, ends, reads


def rank_alive(token: str, rank: int) -> bool:
    needle = f"{RANK_VARIABLE}={token}-{rank}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:
                continue
            if needle in environ.split(b"\0"):
                return True
    return False


def wait_killed(plm, token: str, ranks: list[int]) -> None:
    """Wait until the daemon has answered for ``ranks`` (started) and they are gone."""
    daemon = plm._by_name["localhost"]
    deadline = time.monotonic() + 10
    while not all(r in daemon.answers for r in ranks) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(daemon.answers[r].pid for r in ranks), "the daemon did not start them"
    while any(rank_alive(token, r) for r in ranks) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(rank_alive(token, r) for r in ranks), "a rank not handed over survived"


def sent_ops(plm) -> list[str]:
    """Record the op of every message the daemon server is asked to send from now on."""
    server = plm._server
    ops: list[str] = []
    send = server.send

    def recording(daemon, message):
        ops.append(message["op"])
        send(daemon, message)

    server.send = recording
    return ops


def test_a_nodes_ranks_go_in_one_launch_each_with_its_own_environment(tmp_path):
    show = "import os; print(os.environ['OMPY_PLM_SSH_TEST_RANK'], os.environ.get('ONLY_COMMON'))"
    program = [sys.executable, "-c", show]
    with prepared(tmp_path, program, {"ONLY_COMMON": "shared"}) as plm:
        ops = sent_ops(plm)
        token = secrets.token_hex(4)
        # rank 1 lacks a variable of the common environment: it must not get it
        requests, ends, reads = requests_for(plm, [program] * 3, token)
        requests[1] = attrs.evolve(
            requests[1], env={k: v for k, v in requests[1].env.items() if k != "ONLY_COMMON"}
        )
        processes = list(plm.spawn_all(requests))
        for fd in ends:
            os.close(fd)
        assert ops.count("launch") == 1 and "spawn" not in ops
        assert [p.rank for p in processes] == [0, 1, 2]
        assert all(wait_exit(p) == 0 for p in processes)
        outputs = [read_all(out).decode().split() for out, _err in reads]
        assert outputs == [
            [f"{token}-0", "shared"],
            [f"{token}-1", "None"],
            [f"{token}-2", "shared"],
        ]
        for _out, err in reads:
            assert read_all(err) == b""
        for process in processes:
            process.release()


def test_a_rank_that_cannot_start_ends_the_batch_and_kills_the_ranks_sent_after_it(tmp_path):
    sleeper = ["sleep", "30"]
    with prepared(tmp_path, sleeper) as plm:
        token = secrets.token_hex(4)
        programs = [sleeper, ["/no/such/prog"], sleeper, sleeper]
        requests, ends, reads = requests_for(plm, programs, token)
        processes = plm.spawn_all(requests)
        first = next(processes)
        with pytest.raises(
            LaunchError, match=r"cannot start rank 1 on .*'/no/such/prog'"
        ) as caught:
            next(processes)
        assert caught.value.exit_code == 127
        for fd in ends:
            os.close(fd)
        wait_killed(plm, token, [2, 3])
        assert rank_alive(token, 0), "the rank handed to the launcher is the launcher's to end"
        first.signal(signal.SIGKILL)
        assert wait_exit(first) == -signal.SIGKILL
        first.release()
        for out, err in reads:
            read_all(out), read_all(err)


def test_ranks_sent_but_not_taken_when_the_launcher_stops_are_killed(tmp_path):
    """A signal to ``ompy run`` while it starts ranks: it closes the generator."""
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    with prepared(tmp_path, sleeper) as plm:
        ops = sent_ops(plm)
        token = secrets.token_hex(4)
        requests, ends, reads = requests_for(plm, [sleeper] * 3, token)
        processes = plm.spawn_all(requests)
        first = next(processes)
        processes.close()
        for fd in ends:
            os.close(fd)
        assert ops.count("launch") == 1  # all three were sent before the first was taken
        wait_killed(plm, token, [1, 2])
        assert rank_alive(token, 0)
        first.signal(signal.SIGKILL)
        assert wait_exit(first) == -signal.SIGKILL
        first.release()
        for out, err in reads:
            read_all(out), read_all(err)
