"""``ompy doctor`` on this machine: a stand-in remote shell runs each step's command locally.

The stand-in (``fake-ssh HOST COMMAND``) drops the host name and runs the command with ``sh``,
as ssh would run it on that host; host ``unreachable`` fails as ssh does when it cannot connect.
Hosts that are really separate machines (network namespaces with sshd) are tested in
``integration/multihost/test_doctor.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ompy.opal.layer import installed_layers
from ompy.opal.mca.params import Registry
from ompy.orte.doctor import Settings, settings_from
from ompy.orte.doctor.checks import (
    ConnectBack,
    Outcome,
    _interface_finding,
    check_host,
    diagnose,
    remote,
)

pytestmark = pytest.mark.timeout(120)

FAKE_SSH = """#!/bin/sh
host=$1; shift
if [ "$host" = unreachable ]; then
    echo "ssh: connect to host $host port 22: No route to host" >&2
    exit 255
fi
exec sh -c "$1"
"""
LAYERS = {layer.name: layer.version for layer in installed_layers()}


@pytest.fixture
def fake_ssh(tmp_path: Path) -> Settings:
    agent = tmp_path / "fake-ssh"
    agent.write_text(FAKE_SSH)
    agent.chmod(0o755)
    return Settings(agent=(str(agent),), step_timeout=60, probe_timeout=1)


@pytest.fixture
def back():
    listener = ConnectBack()
    yield listener
    listener.close()


def test_a_healthy_host_passes_the_four_host_steps(fake_ssh, back):
    findings = check_host("node1", fake_ssh, back, LAYERS)
    assert [(f.step, f.status) for f in findings] == [
        ("ssh", "ok"),
        ("interpreter", "ok"),
        ("ompy", "ok"),
        ("connect-back", "ok"),
    ]
    assert findings[1].detail == f"{sys.executable} (Python {sys.version.split()[0]})"
    assert findings[3].detail.startswith(f"reached 127.0.0.1:{back.port}")
    assert back.arrived == {"node1"}


def test_a_host_ssh_cannot_reach_fails_at_ssh_and_skips_the_rest(fake_ssh, back):
    findings = check_host("unreachable", fake_ssh, back, LAYERS)
    assert [(f.step, f.status) for f in findings] == [
        ("ssh", "failed"),
        ("interpreter", "skipped"),
        ("ompy", "skipped"),
        ("connect-back", "skipped"),
        ("interfaces", "skipped"),
    ]
    assert "exited with 255: ssh: connect to host unreachable port 22" in findings[0].detail
    assert all(f.host == "unreachable" for f in findings)


def test_another_interpreter_version_is_a_failure_saying_both(fake_ssh, back, tmp_path):
    other = tmp_path / "python-other"
    other.write_text("#!/bin/sh\necho 2.7.18\n")
    other.chmod(0o755)
    settings = Settings(agent=fake_ssh.agent, python=str(other), step_timeout=30)
    findings = check_host("node1", settings, back, LAYERS)
    failure = findings[1]
    assert (failure.step, failure.status) == ("interpreter", "failed")
    assert f"is Python 2.7.18, here Python {sys.version.split()[0]}" in failure.detail
    assert "plm_ssh_python" in failure.detail


def test_another_ompy_version_is_a_failure_naming_the_layer(fake_ssh, back):
    mine = {**LAYERS, "orte": "0.0.1"}
    findings = check_host("node1", fake_ssh, back, mine)
    failure = findings[2]
    assert (failure.step, failure.status) == ("ompy", "failed")
    assert f"orte {LAYERS['orte']} there, 0.0.1 here" in failure.detail


def test_a_launcher_address_nobody_listens_on_fails_connect_back(fake_ssh, back):
    settings = Settings(agent=fake_ssh.agent, launcher_host="127.0.0.2", step_timeout=30)
    back.close()  # nothing listens on the port any more
    findings = check_host("node1", settings, back, LAYERS)
    failure = findings[3]
    assert (failure.step, failure.status) == ("connect-back", "failed")
    assert "cannot connect to 127.0.0.2:" in failure.detail
    assert "plm_ssh_launcher_host" in failure.detail


def test_one_host_passes_the_interfaces_step_with_nobody_else_to_reach(fake_ssh):
    findings = diagnose(["node1"], fake_ssh, LAYERS)
    assert [(f.step, f.status) for f in findings][-1] == ("interfaces", "ok")
    assert findings[-1].detail == "no other host to reach"


def test_the_remote_command_is_one_quoted_shell_line():
    settings = Settings(agent=("ssh", "-F", "/c f"))
    assert remote(settings, "h2", ["/opt/my python", "-c", "print(1)"]) == [
        "ssh",
        "-F",
        "/c f",
        "h2",
        "'/opt/my python' -c 'print(1)'",
    ]


def _probe_outcome(peers: dict) -> Outcome:
    return Outcome(("probe",), 0, json.dumps({"local": ["eth0"], "peers": peers}), "")


def test_interface_findings_list_what_reaches_or_everything_that_was_tried():
    cards = {"h1": [{"name": "eth0"}], "h2": [{"name": "eth0"}]}
    row = {"local": "eth0", "local_address": "10.0.0.1", "remote": "eth0"}
    ok = _interface_finding(
        "h1",
        _probe_outcome({"h2": [{**row, "remote_address": "10.0.0.2", "reachable": True}]}),
        cards,
    )
    assert (ok.status, ok.detail) == ("ok", "h2: eth0->eth0 10.0.0.2")
    refused = {**row, "remote_address": "10.0.0.2", "reachable": False, "reason": "refused"}
    bad = _interface_finding("h1", _probe_outcome({"h2": [refused]}), cards)
    assert bad.status == "failed"
    assert bad.detail == "reaches h2 through no interface (eth0 (10.0.0.1) -> 10.0.0.2: refused)"


def test_settings_come_from_the_raw_mca_settings():
    registry = Registry(
        environ={
            "OMPY_MCA_plm_ssh_agent": "ssh -F '/my config'",
            "OMPY_MCA_plm_ssh_python": "/usr/bin/python3",
            "OMPY_MCA_btl_tcp_if_include": "eth1, 10.2.0.0/16",
            "OMPY_MCA_btl_tcp_if_bridges": "yes",
        },
        files=[],
    )
    settings = settings_from(registry, step_timeout=5, probe_timeout=2)
    assert settings.agent == ("ssh", "-F", "/my config")
    assert settings.python == "/usr/bin/python3"
    assert settings.include == ("eth1", "10.2.0.0/16") and settings.bridges
    default = settings_from(Registry(environ={}, files=[]), step_timeout=5, probe_timeout=2)
    assert default.agent == ("ssh",) and default.python == sys.executable


@pytest.mark.parametrize(
    ("name", "value", "complaint"),
    [("btl_tcp_if_bridges", "maybe", "not a boolean"), ("plm_ssh_agent", "  ", "is empty")],
)
def test_bad_settings_are_errors_naming_the_parameter(name, value, complaint):
    registry = Registry(environ={f"OMPY_MCA_{name}": value}, files=[])
    with pytest.raises(ValueError, match=rf"{name}.*{complaint}"):
        settings_from(registry, step_timeout=5, probe_timeout=2)


def test_the_command_needs_hosts_and_reports_a_usage_error():
    ompy = str(Path(sys.executable).with_name("ompy"))
    done = subprocess.run([ompy, "doctor"], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert "name the hosts to check with --host or --hostfile" in done.stderr


def test_the_agent_explains_its_usage():
    done = subprocess.run(
        [sys.executable, "-m", "ompy.orte.doctor.agent", "dance"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "usage: python -m ompy.orte.doctor.agent {versions,connect-back,probe,serve}" in (
        done.stderr
    )


def test_a_hostfile_names_the_hosts_and_the_json_lines_say_every_step(fake_ssh, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the cluster\nnode1 slots=4\nunreachable slots=2\n")
    ompy = str(Path(sys.executable).with_name("ompy"))
    done = subprocess.run(
        [
            *(ompy, "doctor", "--json", "--hostfile", str(hostfile)),
            *("--mca", "plm_ssh_agent", fake_ssh.agent[0]),
        ],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    statuses = {(r["host"], r["step"]): r["status"] for r in records}
    assert statuses[("node1", "connect-back")] == "ok"
    assert statuses[("node1", "interfaces")] == "ok"
    assert statuses[("unreachable", "ssh")] == "failed"
    assert len(records) == 10  # five steps on each of the two hosts


def test_a_malformed_hostfile_is_a_usage_error_naming_the_line(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1 cores=4\n")
    ompy = str(Path(sys.executable).with_name("ompy"))
    done = subprocess.run(
        [ompy, "doctor", "--hostfile", str(hostfile)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert f"{hostfile}:1: unexpected 'cores=4'" in done.stderr
