"""Many ranks on few cores, host lists and hostfiles, and mistakes caught before launch."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"

pytestmark = pytest.mark.timeout(180)


def test_64_oversubscribed_ranks_start_fence_and_exit(ompy):
    result = ompy.run(["-n", "64", "python", "-m", "ompy.orte.demo"], timeout=150)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "oversubscribing: 64 ranks" in warnings[0]
    assert "64 rank(s), launched" in result.stdout
    ranks = [int(line.split()[0]) for line in result.stdout.splitlines()[3:]]
    assert ranks == list(range(64))


def test_a_wrong_secret_is_refused_and_the_job_goes_on(ompy):
    result = ompy.run(["-n", "2", "-q", str(PROGRAMS / "intruder.py")])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "refused: AuthenticationError"


def test_hostfile_slots_and_map_by(ompy, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text(
        f"# this machine, under two names\nlocalhost slots=2\n{socket.gethostname()}\n"
    )
    result = ompy.run(
        [
            "-n",
            "3",
            "--hostfile",
            str(hostfile),
            "--map-by",
            "node",
            "--no-oversubscribe",
            "sh",
            "-c",
            'echo "$OMPY_RANK $OMPY_NODE_ID $OMPY_LOCAL_RANK $OMPY_LOCAL_SIZE"',
        ],
    )
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.splitlines()) == ["0 0 0 3", "1 0 1 3", "2 0 2 3"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["--host", "localhost:1,nosuchnode:2", "true"],
            1,
            "cannot start rank 1 on nosuchnode: the daemon on nosuchnode ended (status 255); "
            "it said: ssh: Could not resolve hostname nosuchnode",
        ),
        (
            ["-n", "3", "--host", "localhost:2", "--no-oversubscribe", "true"],
            1,
            "not enough slots: 3 ranks on 2 slots (--host)",
        ),
        (["--hostfile", "/nonexistent/hosts", "true"], 1, "cannot read the hostfile"),
        (["-n", "1", "no-such-program-xyz"], 127, "'no-such-program-xyz' was not found on PATH"),
        (["-n", "1", "{plain_file}"], 126, "is not executable"),
        (["-n", "1", "{script_without_shebang}"], 126, "a script needs a '#!' line"),
        (
            ["-n", "1", "--wdir", "/nonexistent", "true"],
            2,
            "--wdir /nonexistent: no such directory",
        ),
        (["-n", "1", "-x", "OMPY_TEST_UNSET_VAR", "true"], 2, "OMPY_TEST_UNSET_VAR is not set"),
        (
            ["-n", "1", "--mca", "orte_abort_timeout", "soon", "true"],
            1,
            "'orte_abort_timeout' has the invalid value 'soon' (from command line",
        ),
        (["-n", "1", "--mca", "plm", "nosuch", "true"], 1, "no plm component named 'nosuch'"),
    ],
    ids=[
        "remote-host",
        "no-oversubscribe",
        "hostfile",
        "not-found",
        "not-executable",
        "no-shebang",
        "wdir",
        "export",
        "mca-value",
        "mca-component",
    ],
)
def test_mistakes_are_clear_errors_before_anything_runs(ompy, tmp_path, args, code, message):
    plain = tmp_path / "plain"
    plain.write_text("data\n")
    script = tmp_path / "script"
    script.write_text("echo hi\n\0")
    script.chmod(0o755)
    files = {"plain_file": str(plain), "script_without_shebang": str(script)}
    result = ompy.run([arg.format(**files) for arg in args])
    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert result.stderr.startswith("ompy run: ")
