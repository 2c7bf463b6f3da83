"""``ompy doctor`` against namespace hosts with sshd: every step passes, and each kind of broken
host is named with the step that failed.

The doctor runs on ``h1`` (as a user on a login node would) and reaches the hosts through the
fixtures' ssh wrapper (``plm_ssh_agent``).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from .conftest import OMPY

pytestmark = pytest.mark.timeout(240)


def doctor(hosts, on: str, *args: str, timeout: float = 150) -> tuple[int, dict, str]:
    """Run ``ompy doctor --json`` on host ``on``: exit code, {(host, step): finding}, stderr."""
    agent = ["--mca", "plm_ssh_agent", str(hosts.multihost.ssh)]
    done = hosts.run(on, [OMPY, "doctor", "--json", *agent, *args], timeout=timeout)
    return done.returncode, parse(done.stdout), done.stderr


def parse(stdout: str) -> dict:
    """{(host, step): finding} from the doctor's --json output."""
    findings = {}
    for line in stdout.splitlines():
        record = json.loads(line)
        findings[(record["host"], record["step"])] = record
    return findings


def test_healthy_hosts_pass_every_step_and_show_which_interfaces_reach(hosts):
    code, findings, err = doctor(hosts, "h1", "--host", "h1,h2,h3")
    assert code == 0, err
    steps = ("ssh", "interpreter", "ompy", "connect-back", "interfaces")
    assert set(findings) == {(h, s) for h in ("h1", "h2", "h3") for s in steps}
    assert all(f["status"] == "ok" for f in findings.values()), findings
    # h2 connected back to the doctor on h1 through h1's address as ssh saw it.
    assert findings[("h2", "connect-back")]["detail"].startswith("reached 10.77.0.1:")
    detail = findings[("h1", "interfaces")]["detail"]
    assert "h2: eth0->eth0 10.77.0.2, eth1->eth1 10.77.1.2" in detail
    assert "h3: eth0->eth0 10.77.0.3, eth1->eth1 10.77.1.3" in detail


def test_a_host_without_ssh_is_named_with_the_ssh_step(hosts):
    code, findings, _err = doctor(hosts, "h1", "--host", "h2,h9", "--timeout", "20")
    assert code == 1
    failure = findings[("h9", "ssh")]
    assert failure["status"] == "failed" and "h9" in failure["detail"]
    assert findings[("h9", "interpreter")] == {
        "host": "h9",
        "step": "interpreter",
        "status": "skipped",
        "detail": "ssh failed",
    }
    assert findings[("h2", "interfaces")]["status"] == "ok"


def test_a_host_that_cannot_connect_back_is_named_with_that_step(hosts):
    # Daemons told to reach the launcher at 127.0.0.1 reach their own host instead.
    code, findings, _err = doctor(
        hosts, "h1", "--host", "h2", "--mca", "plm_ssh_launcher_host", "127.0.0.1"
    )
    assert code == 1
    failure = findings[("h2", "connect-back")]
    assert failure["status"] == "failed"
    assert "cannot connect to 127.0.0.1:" in failure["detail"]
    assert "plm_ssh_launcher_host" in failure["detail"]
    assert findings[("h2", "interfaces")]["status"] == "skipped"


def test_a_missing_interpreter_is_named_with_the_interpreter_step(hosts):
    code, findings, _err = doctor(
        hosts, "h1", "--host", "h2", "--mca", "plm_ssh_python", "/nonexistent/python3"
    )
    assert code == 1
    failure = findings[("h2", "interpreter")]
    assert failure["status"] == "failed"
    assert "/nonexistent/python3 does not run there" in failure["detail"]


def test_hosts_no_interface_of_which_reach_each_other_fail_the_interfaces_step(
    netns_cluster_factory, hosts
):
    # h1 and h2 have two NICs, h3 one; with eth0 left out, h3 has nothing to offer and neither
    # h1 nor h2 has anything that reaches h3.
    layout = netns_cluster_factory(nics=(2, 2, 1), sshd=True)
    argv = [
        *(OMPY, "doctor", "--json", "--host", "h1,h2,h3", "--probe-timeout", "1"),
        *("--mca", "plm_ssh_agent", str(layout.ssh), "--mca", "btl_tcp_if_exclude", "lo,eth0"),
    ]
    done = subprocess.run(
        layout.host("h1").command(argv),
        capture_output=True,
        text=True,
        timeout=150,
        env=hosts.env(),
        check=False,
    )
    findings = parse(done.stdout)
    assert done.returncode == 1, done.stderr
    h1 = findings[("h1", "interfaces")]
    assert h1["status"] == "failed" and "reaches h3 through no interface" in h1["detail"]
    assert "h2: eth1->eth1 10.77.1.2" not in h1["detail"]  # only failures are listed then
    assert findings[("h2", "interfaces")]["status"] == "failed"
    h3 = findings[("h3", "interfaces")]
    assert h3["status"] == "failed" and "no usable interface" in h3["detail"]
    assert "ompy doctor: h1 failed at step interfaces" not in done.stderr  # --json: no summary
    assert not layout.stray_pids()
