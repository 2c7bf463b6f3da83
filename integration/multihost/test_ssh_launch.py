"""``ompy run`` across hosts through plm ssh: one ``ompy daemon`` per host, ranks forked by it.

The hosts are network namespaces with their own sshd (see ``conftest.py``); the launcher runs
on ``h1``.  The namespaces share ``/dev/shm``, so the jobs select ``--mca btl self,tcp`` and
the tests check the hosts' NIC counters: the data really crossed between namespace addresses.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
COLL_SUITE = Path(__file__).parents[1] / "coll" / "programs" / "coll_suite.py"
SIX = ["--host", "h1:2,h2:2,h3:2"]
TCP = ["--mca", "btl", "self,tcp"]

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]
#: The PML's verbose listing of the modules that reach each peer (the group is the pid).
ENDPOINTS = re.compile(r"^\[rank \d+ pid (\d+)\] pml ob1: (.*)$", re.MULTILINE)
ENDPOINT = re.compile(r"<BmlEndpoint to rank (\d+): ([^>]*)>")


def reports(stdout: str) -> dict[int, dict]:
    found = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            found[report["rank"]] = report
    return found


def received(before: dict, after: dict) -> dict[str, int]:
    """Bytes each host received on its NICs between two readings of the counters."""
    grew: dict[str, int] = {}
    for (host, _nic), (rx, _tx) in after.items():
        grew[host] = grew.get(host, 0) + rx - before[(host, _nic)][0]
    return grew


def test_p2p_and_collectives_across_three_hosts_over_tcp(cluster, hosts):
    before = cluster.cluster.nic_counters()
    program = [sys.executable, str(PROGRAMS / "across_hosts.py")]
    result = hosts.ompy_run("h1", [*SIX, *TCP, *program], timeout=180)
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    assert sorted(found) == list(range(6)), result.stdout
    assert [found[r]["host"] for r in range(6)] == ["h1", "h1", "h2", "h2", "h3", "h3"]
    for report in found.values():
        sections = {name.split(":")[0] for name in report["checks"]}
        assert sections == {"p2p", "coll", "comm"}, report
        assert "p2p:Sendrecv:4194304" in report["checks"] and "coll:Bcast" in report["checks"]
    # Every host received the 4 MiB ring messages and the 3 MiB broadcast over its NICs.
    grew = received(before, cluster.cluster.nic_counters())
    assert all(grew[host] >= 7 << 20 for host in ("h1", "h2", "h3")), grew


def test_the_collective_suite_across_three_hosts(cluster, hosts):
    before = cluster.cluster.nic_counters()
    result = hosts.ompy_run("h1", [*SIX, *TCP, sys.executable, str(COLL_SUITE)], timeout=200)
    assert result.returncode == 0, result.stderr
    assert sorted(reports(result.stdout)) == list(range(6)), result.stdout
    grew = received(before, cluster.cluster.nic_counters())
    assert all(grew[host] >= 4 << 20 for host in ("h1", "h2", "h3")), grew


def test_identity_environment_stdin_and_output_of_remote_ranks(hosts):
    script = (
        'echo "rank $OMPY_RANK of $OMPY_SIZE on $(hostname) node $OMPY_NODE_NAME '
        "local $OMPY_LOCAL_RANK/$OMPY_LOCAL_SIZE x=$FOO mca=$OMPY_MCA_orte_abort_timeout "
        "env-mca=$OMPY_MCA_orte_stack_timeout "
        'private=${LAUNCHER_ONLY:-unset}"; echo "err $OMPY_RANK" >&2; '
        'if [ "$OMPY_RANK" = 0 ]; then tr a-z A-Z; fi'
    )
    result = hosts.ompy_run(
        "h1",
        [
            "--host",
            "h2:2,h3:1",
            "-x",
            "FOO=bar",
            "--mca",
            "orte_abort_timeout",
            "7",
            "sh",
            "-c",
            script,
        ],
        env={"LAUNCHER_ONLY": "yes", "OMPY_MCA_orte_stack_timeout": "9"},
        input="standard input\nfor rank 0\n",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert sorted(line for line in lines if line.startswith("rank")) == [
        "rank 0 of 3 on h2 node h2 local 0/2 x=bar mca=7 env-mca=9 private=unset",
        "rank 1 of 3 on h2 node h2 local 1/2 x=bar mca=7 env-mca=9 private=unset",
        "rank 2 of 3 on h3 node h3 local 0/1 x=bar mca=7 env-mca=9 private=unset",
    ]
    assert "STANDARD INPUT\nFOR RANK 0" in result.stdout
    assert sorted(result.stderr.splitlines()) == ["err 0", "err 1", "err 2"]


def test_the_exit_code_of_a_failing_remote_rank_and_its_host(hosts):
    script = 'if [ "$OMPY_RANK" = 3 ]; then exit 5; fi; sleep 30'
    started = time.monotonic()
    result = hosts.ompy_run("h1", [*SIX, "sh", "-c", script], timeout=60)
    assert result.returncode == 5, result.stderr
    assert "rank 3 of 6" in result.stderr and "on h2" in result.stderr, result.stderr
    assert time.monotonic() - started < 25  # the others were terminated, not waited for


def test_signals_reach_the_remote_ranks(hosts):
    script = 'trap "echo TERM on $(hostname); exit 0" TERM; echo ready; while :; do sleep 0.1; done'
    launcher = hosts.start("h1", hosts.ompy_argv([*SIX, "sh", "-c", script]))
    assert launcher.stdout is not None
    for _ in range(6):
        assert launcher.stdout.readline().strip() == "ready"
    launcher.send_signal(signal.SIGTERM)
    out, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 128 + signal.SIGTERM, err
    assert sorted(out.splitlines()) == ["TERM on h1"] * 2 + ["TERM on h2"] * 2 + ["TERM on h3"] * 2


def daemon_pid(host) -> int:
    """The pid of the ompy daemon running on ``host``."""
    for pid in host.pids():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"-m" in argv and b"ompy.orte.daemon" in argv:
            return pid
    raise AssertionError(f"no ompy daemon runs on {host.name}")


SLEEPER = "from ompy import MPI; import time; print('ready', flush=True); time.sleep(120)"


def test_a_killed_daemon_ends_the_job_naming_its_host(cluster, hosts):
    launcher = hosts.start("h1", hosts.ompy_argv([*SIX, sys.executable, "-c", SLEEPER]))
    assert launcher.stdout is not None
    for _ in range(6):
        assert launcher.stdout.readline().strip() == "ready"
    os.kill(daemon_pid(cluster.host("h3")), signal.SIGKILL)
    _out, err = launcher.communicate(timeout=60)
    assert launcher.returncode != 0
    assert "the ompy daemon on h3 was lost" in err, err
    # The killed daemon could not remove its session directory: the next daemon on h3 does.
    assert hosts.ompy_run("h1", ["--host", "h3:1", "true"]).returncode == 0


def test_daemons_that_lose_their_launcher_kill_their_ranks(cluster, hosts):
    launcher = hosts.start("h1", hosts.ompy_argv([*SIX, sys.executable, "-c", SLEEPER]))
    assert launcher.stdout is not None
    for _ in range(6):
        assert launcher.stdout.readline().strip() == "ready"
    launcher.kill()
    launcher.communicate(timeout=30)
    deadline = time.monotonic() + 15
    while cluster.stray_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not cluster.stray_pids()
    # The killed launcher's session directory, and that of the daemon on its own host (killed
    # with it), are swept by the next launcher, as on one host.
    assert hosts.ompy_run("h1", ["-n", "1", "true"]).returncode == 0


def test_a_tree_of_daemons_beyond_the_fanout(hosts):
    script = 'echo "$OMPY_NODE_NAME ${SSH_CONNECTION%% *}"'
    result = hosts.ompy_run(
        "h1",
        ["--host", "h1:1,h2:1,h3:1", "--mca", "plm_ssh_tree_fanout", "1", "sh", "-c", script],
    )
    assert result.returncode == 0, result.stderr
    # h1 runs its daemon directly; the launcher sshes to h2 only; h2's daemon sshes to h3.
    assert sorted(result.stdout.splitlines()) == ["h1 ", "h2 10.77.0.1", "h3 10.77.0.2"]


def test_a_host_that_cannot_connect_back_is_named(netns_cluster_factory, hosts_on):
    layout = netns_cluster_factory(nics=(2, 2, 1))  # h3 has no NIC on 10.77.1.0/24
    on = hosts_on(layout)
    result = on.ompy_run(
        "h1",
        ["--host", "h1:1,h2:1,h3:1", "--mca", "plm_ssh_launcher_host", "10.77.1.1", "true"],
    )
    assert result.returncode == 1
    assert "cannot start rank 2 on h3: the daemon on h3 ended (status 1)" in result.stderr
    assert "cannot connect back to the launcher at 10.77.1.1:" in result.stderr
    assert "unreachable" in result.stderr


def test_a_hostfile_names_the_hosts_and_their_slots(hosts):
    hostfile = hosts.tmpdir.parent / "hostfile"
    hostfile.write_text("# two hosts of the cluster\nh2 slots=2\nh3 slots=1\n")
    result = hosts.ompy_run(
        "h1", ["--hostfile", str(hostfile), "sh", "-c", 'echo "$OMPY_RANK $(hostname)"']
    )
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["0 h2", "1 h2", "2 h3"]


@pytest.mark.parametrize(
    ("code", "returncode", "message"),
    [
        (
            "if c.rank == 4: raise ValueError('bad value on h3')\nc.Barrier()",
            1,
            "rank 4 of 6 (pid {pid}, on h3) raised an uncaught exception",
        ),
        (
            "if c.rank == 3: c.Abort(7)\ntime.sleep(60)",
            7,
            "rank 3 of 6 (pid {pid}, on h2) called abort with error code 7",
        ),
    ],
    ids=["exception", "abort"],
)
def test_a_remote_ranks_exception_or_abort_reaches_the_launcher(hosts, code, returncode, message):
    program = f"from ompy import MPI\nimport time\nc = MPI.COMM_WORLD\n{code}\n"
    started = time.monotonic()
    result = hosts.ompy_run("h1", [*SIX, sys.executable, "-c", program], timeout=60)
    assert result.returncode == returncode, result.stderr
    head, _, tail = message.partition("{pid}")
    assert head in result.stderr and tail in result.stderr, result.stderr
    if returncode == 1:
        assert "[rank 4] ValueError: bad value on h3" in result.stderr
    assert time.monotonic() - started < 40


def test_default_transports_shared_memory_within_a_host_tcp_between(cluster, hosts):
    """The launcher gives remote ranks their node identity: sm only between ranks of a host."""
    before = cluster.cluster.nic_counters()
    program = [sys.executable, str(PROGRAMS / "across_hosts.py")]
    verbose = ["--mca", "pml_base_verbose", "10"]
    result = hosts.ompy_run("h1", [*SIX, *verbose, *program], timeout=180)
    assert result.returncode == 0, result.stderr
    assert sorted(reports(result.stdout)) == list(range(6))
    routes = {}
    for pid, listing in ENDPOINTS.findall(result.stderr):
        routes[int(pid)] = {int(r): m for r, m in ENDPOINT.findall(listing)}
    assert len(routes) == 6, result.stderr
    for peers in routes.values():
        own = next(rank for rank, modules in peers.items() if modules == "self")
        for rank, modules in peers.items():
            if rank != own:
                same_host = rank // 2 == own // 2
                assert (modules == "sm") == same_host, peers
                assert same_host or modules.startswith("tcp:eth"), peers
    grew = received(before, cluster.cluster.nic_counters())
    assert all(grew[host] >= 7 << 20 for host in ("h1", "h2", "h3")), grew


def test_no_command_line_on_any_host_holds_the_job_secret(cluster, hosts):
    script = 'echo "$OMPY_SECRET"; sleep 3'
    launcher = hosts.start("h1", hosts.ompy_argv([*SIX, "sh", "-c", script]))
    assert launcher.stdout is not None
    secrets = {launcher.stdout.readline().strip() for _ in range(6)}  # every rank runs now
    assert len(secrets) == 1
    secret = secrets.pop()
    assert len(secret) == 64
    for host in cluster.hosts:
        for pid in host.pids():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            assert secret.encode() not in cmdline, (host.name, cmdline)
    _out, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 0, err


def test_the_interpreter_of_the_daemons_is_a_parameter(hosts):
    result = hosts.ompy_run(
        "h1", ["--host", "h2:1", "--mca", "plm_ssh_python", "/no/such/python3", "true"]
    )
    assert result.returncode == 1
    assert "cannot start rank 0 on h2: the daemon on h2 ended (status 127)" in result.stderr
    assert "/no/such/python3" in result.stderr


def set_links(host, state: str) -> None:
    for nic in range(host.nics):
        subprocess.run(["ip", "-n", host.namespace, "link", "set", f"eth{nic}", state], check=True)


def test_a_host_that_vanishes_from_the_network_ends_the_job_naming_it(cluster, hosts):
    launcher = hosts.start("h1", hosts.ompy_argv([*SIX, sys.executable, "-c", SLEEPER]))
    assert launcher.stdout is not None
    for _ in range(6):
        assert launcher.stdout.readline().strip() == "ready"
    h3 = cluster.host("h3")
    set_links(h3, "down")  # no FIN, no RST: only keep-alive probes can tell
    try:
        started = time.monotonic()
        _out, err = launcher.communicate(timeout=90)
        assert launcher.returncode != 0
        assert "the ompy daemon on h3 was lost" in err, err
        assert time.monotonic() - started < 60
    finally:
        set_links(h3, "up")
    # Back on the network, h3's daemon learns that its launcher is gone and ends its ranks.
    deadline = time.monotonic() + 60
    while cluster.stray_pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not cluster.stray_pids()
