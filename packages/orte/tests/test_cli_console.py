"""The ``ompy`` executable ends with its command's status and loses no output on the way out."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ompy.orte.launcher.forkserver.rankmain import exit_status

CONSOLE = "import sys; sys.argv[0] = 'ompy'; from ompy.orte.cli.main import console; console()"


def ompy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", CONSOLE, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("code", "status"), [(None, 0), (0, 0), (3, 3), (130, 130), (256, 0), (-1, 255)]
)
def test_exit_status_is_what_sys_exit_would_give(code, status):
    assert exit_status(SystemExit(code)) == status


def test_a_message_as_exit_code_is_printed_and_gives_1(capsys):
    assert exit_status(SystemExit("cannot go on")) == 1
    assert capsys.readouterr().err == "cannot go on\n"


def test_the_status_of_the_job_is_the_status_of_the_executable():
    assert ompy("run", "-n", "2", "true").returncode == 0
    failed = ompy("run", "-n", "1", sys.executable, "-c", "raise SystemExit(7)")
    assert failed.returncode == 7
    assert "exits with code 7" in failed.stderr


def test_output_written_just_before_the_end_arrives_whole():
    lines = 2000
    program = f"print(*('x' * 79 for _ in range({lines})), sep='\\n')"
    done = ompy("run", "-n", "2", sys.executable, "-c", program)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["x" * 79] * (2 * lines)


def test_usage_errors_keep_clicks_status_and_message():
    done = ompy("--no-such-option")
    assert done.returncode == 2
    assert "No such option '--no-such-option'" in done.stderr
    assert ompy("--version").stdout.startswith("ompy-opal ")
