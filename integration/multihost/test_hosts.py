"""The namespace hosts behave like separate machines: names, addresses, ssh, TCP, clean-up."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .netns import Cluster, sweep_stale

pytestmark = pytest.mark.timeout(120)

ECHO_SERVER = textwrap.dedent(
    """
    import socket, sys
    listener = socket.create_server((sys.argv[1], 0))
    print(listener.getsockname()[1], flush=True)
    peer, _ = listener.accept()
    received = 0
    while chunk := peer.recv(1 << 16):
        received += len(chunk)
    print(received, flush=True)
    """
)
SENDER = textwrap.dedent(
    """
    import socket, sys
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10) as c:
        c.sendall(bytes(int(sys.argv[3])))
    """
)


def test_each_host_has_its_name_addresses_and_hosts_file(cluster, hosts):
    for host in cluster.hosts:
        out = hosts.run(host.name, ["sh", "-c", "hostname; ip -4 -o addr show; getent hosts h3"])
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == host.name
        assert {a for line in lines[1:-1] for a in [line.split()[3].split("/")[0]]} == {
            "127.0.0.1",
            *host.addresses,
        }
        assert lines[-1].split()[0] == "10.77.0.3"


def test_ssh_between_hosts_reaches_the_named_host(cluster, hosts):
    for source in ("h1", "h3"):
        for target in ("h1", "h2", "h3", "h2-nic1"):
            out = hosts.run(source, [str(cluster.ssh), target, "hostname"])
            assert out.returncode == 0, out.stderr
            assert out.stdout.strip() == target.split("-")[0]


def test_remote_commands_find_the_test_interpreter(cluster, hosts):
    out = hosts.run("h1", [str(cluster.ssh), "h2", sys.executable, "-c", "'import ompy.orte'"])
    assert out.returncode == 0, out.stderr


def test_tcp_between_hosts_crosses_the_nic_and_is_counted(cluster, hosts):
    size = 3_000_000
    for nic in (0, 1):
        before = cluster.cluster.nic_counters()
        server = hosts.start("h2", [sys.executable, "-c", ECHO_SERVER, f"10.77.{nic}.2"])
        port = server.stdout.readline().strip()
        sent = hosts.run("h3", [sys.executable, "-c", SENDER, f"10.77.{nic}.2", port, str(size)])
        assert sent.returncode == 0, sent.stderr
        out, err = server.communicate(timeout=30)
        assert out.strip() == str(size), err
        after = cluster.cluster.nic_counters()
        grew = {key: after[key][0] - before[key][0] for key in after}
        assert grew[("h2", f"eth{nic}")] >= size
        assert grew[("h2", f"eth{1 - nic}")] < size // 10


def test_a_host_reaches_only_the_subnets_it_has_a_nic_on(netns_cluster_factory, hosts):
    probe = "import socket; socket.create_connection(('10.77.1.2', 22), timeout=2)"
    both = hosts.run("h1", [sys.executable, "-c", probe])  # h1 of `cluster` has an eth1
    assert both.returncode == 0, both.stderr
    one_nic = netns_cluster_factory(nics=(1, 2), sshd=False)
    done = subprocess.run(
        one_nic.host("h1").command([sys.executable, "-c", probe]),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode != 0 and "unreachable" in done.stderr.lower(), done.stderr


def test_destroy_removes_namespaces_processes_and_files(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    made = Cluster.create(tmp_path, (1, 1))
    sleeper = subprocess.Popen(made.host("h2").command(["sleep", "600"]))
    # ``ip netns exec`` enters the namespace only after it starts: wait for it to get there.
    deadline = time.monotonic() + 30
    while not made.host("h2").pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert made.host("h2").pids() == [sleeper.pid]
    assert made.leftovers()
    made.destroy()
    sleeper.wait(timeout=10)
    assert made.leftovers() == []


def test_the_namespaces_of_a_killed_run_are_swept_by_the_next(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root")
    code = (
        "import sys, pathlib; sys.path.insert(0, sys.argv[1]);"
        "from integration.multihost.netns import Cluster;"
        "c = Cluster.create(pathlib.Path(sys.argv[2]), (1,));"
        "print(c.namespaces(), flush=True); import time; time.sleep(600)"
    )
    root = str(Path(__file__).parents[2])
    creator = subprocess.Popen(
        [sys.executable, "-c", code, root, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert creator.stdout is not None
    names = ast.literal_eval(creator.stdout.readline())  # the creator's namespace names
    creator.kill()
    creator.wait()
    listed = netns_list()
    assert all(name in listed for name in names)
    assert sorted(set(sweep_stale()) & set(names)) == sorted(names)
    listed = netns_list()
    assert not any(name in listed for name in names)


def netns_list() -> str:
    return subprocess.run(
        ["ip", "netns", "list"], capture_output=True, text=True, check=True
    ).stdout
