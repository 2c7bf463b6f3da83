"""A rank forked by the fork server is indistinguishable from an executed one, as a user sees it.

Each test runs the same job with ``plm_local_fork_server`` on (the default) and off and compares
what the ranks saw and what ``ompy run`` reported: argv and ``__main__``, ``sys.path[0]``,
environment, working directory, stdin, stdout buffering, exit codes, tracebacks, signals,
stack reports.  The ``ompy`` fixture checks after each test that no process (launcher, fork
server, rank) and no file is left behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ..conftest import OMPY, marked_pids

PROGRAMS = Path(__file__).parent / "programs"
PYFORMS = PROGRAMS / "pyforms.py"
FAIL = str(PROGRAMS / "fail.py")
MODES = {"forked": "1", "executed": "0"}

pytestmark = pytest.mark.timeout(120)


def _mode(name: str) -> list[str]:
    return ["--mca", "plm_local_fork_server", MODES[name]]


def _reports(stdout: str) -> dict[int, dict]:
    reports = {}
    for line in stdout.splitlines():
        match = re.fullmatch(r"\[\w+,(\d+)\]<stdout>:(\{.*\})", line)
        assert match, f"unexpected output line {line!r}"
        reports[int(match.group(1))] = json.loads(match.group(2))
    return reports


@pytest.mark.parametrize("form", ["script", "module", "code"])
def test_each_python_form_sees_what_an_executed_rank_sees(ompy, tmp_path, form):
    wdir = tmp_path / "work"
    wdir.mkdir()
    program = {
        "script": ["python", str(PYFORMS), "a b", "--flag"],
        "module": ["--wdir", str(PROGRAMS), "python", "-m", "pyforms", "a b", "--flag"],
        "code": ["python", "-c", f"exec(open({str(PYFORMS)!r}).read())", "a b", "--flag"],
    }[form]
    if form != "module":
        program = ["--wdir", str(wdir), *program]
    seen = {}
    for mode in MODES:
        options = ["-n", "3", "--oversubscribe", "--tag-output", "-x", "EXPORTED_X=1"]
        options += ["--mca", "orte_abort_timeout", "1.5", *_mode(mode)]
        result = ompy.run([*options, *program], input="for rank zero\n")
        assert result.returncode == 0, result.stderr
        seen[mode] = _reports(result.stdout)
    forked, executed = seen["forked"], seen["executed"]
    assert sorted(forked) == sorted(executed) == [0, 1, 2]
    assert {forked[rank].pop("forked_by") for rank in range(3)} == {"fork server"}
    assert {executed[rank].pop("forked_by") for rank in range(3)} == {"launcher"}
    randoms = {forked[rank].pop("random") for rank in range(3)}
    assert len(randoms) == 3  # each forked rank has its own generator state
    for rank in range(3):
        executed[rank].pop("random")
        for report in (forked[rank], executed[rank]):  # the one setting that differs
            assert report["env"].pop("OMPY_MCA_plm_local_fork_server") in MODES.values()
        assert forked[rank] == executed[rank], f"rank {rank} differs"
    report = forked[0]
    assert report["argv"][1:] == ["a b", "--flag"]
    assert report["name"] == "__main__" and report["main_is_this_module"]
    assert report["stdin"] == "for rank zero\n" and forked[1]["stdin"] is None
    assert report["env"]["EXPORTED_X"] == "1"
    assert report["env"]["OMPY_MCA_orte_abort_timeout"] == "1.5"
    assert [forked[rank]["env"]["OMPY_RANK"] for rank in range(3)] == ["0", "1", "2"]
    assert report["session"]  # each rank leads its own session
    assert not report["stdout_line_buffering"]  # a pipe, not a terminal
    expected_path0 = {"script": str(PROGRAMS), "module": str(PROGRAMS), "code": ""}[form]
    assert report["path0"] == expected_path0
    expected_argv0 = {"script": str(PYFORMS), "module": str(PYFORMS), "code": "-c"}[form]
    assert report["argv"][0] == expected_argv0
    assert report["file"] == (None if form == "code" else str(PYFORMS))


def test_interpreter_options_are_those_of_the_command_line(ompy, tmp_path):
    results = {
        mode: ompy.run(["-n", "1", *_mode(mode), "python", "-u", "-OO", str(PYFORMS)])
        for mode in MODES
    }
    reports = {mode: json.loads(result.stdout) for mode, result in results.items()}
    assert reports["forked"].pop("forked_by") == "fork server"
    assert reports["executed"].pop("forked_by") == "launcher"
    for report in reports.values():
        report.pop("random")
        report["env"].pop("OMPY_MCA_plm_local_fork_server")
        assert report["stdout_write_through"] and report["flags_optimize"] == 2
    assert reports["forked"] == reports["executed"]


@pytest.mark.parametrize(
    ("code", "returncode", "message"),
    [
        ("import sys; sys.exit(3)", 3, ""),
        ("import sys; sys.exit('leaving early')", 1, "leaving early"),
        ("raise SystemExit", 0, ""),
        ("raise KeyboardInterrupt", 128 + signal.SIGINT, "KeyboardInterrupt"),
        ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", 128 + signal.SIGTERM, ""),
        ("def f():\n    raise ValueError('deliberate')\nf()", 1, "ValueError: deliberate"),
        ("from ompy import MPI\nraise ValueError('after init')", 1, "ValueError: after init"),
        ("syntax error here", 1, "SyntaxError"),
    ],
    ids=["exit-3", "exit-text", "exit-none", "interrupt", "sigterm", "raise", "mpi", "syntax"],
)
def test_exit_codes_signals_and_tracebacks_match(ompy, code, returncode, message):
    reports = {}
    for mode in MODES:
        result = ompy.run(["-n", "1", "-q", *_mode(mode), "python", "-c", code])
        assert result.returncode == returncode, (mode, result.stderr)
        assert message in result.stderr
        # The launcher's report names the rank's pid; everything else is the same.
        reports[mode] = re.sub(r"pid \d+", "pid N", result.stderr)
    assert reports["forked"] == reports["executed"]


def test_a_script_traceback_names_the_script_as_python_does(ompy, tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("from ompy import MPI\n\ndef main():\n    1 / 0\n\nmain()\n")
    reports = {}
    for mode in MODES:
        result = ompy.run(["-n", "1", "-q", *_mode(mode), str(script)])
        assert result.returncode == 1, result.stderr
        reports[mode] = re.sub(r"pid \d+", "pid N", result.stderr)
    assert reports["forked"] == reports["executed"]
    assert f'[rank 0] File "{script}", line 4, in main' in reports["forked"].replace("  ", "")


def test_timeout_reports_every_rank_stack_as_an_executed_rank_would(ompy):
    main_stacks = {}
    for mode in MODES:
        result = ompy.run(["-n", "2", "-q", "--timeout", "5", *_mode(mode), FAIL])
        assert result.returncode == 124, result.stderr
        assert result.stderr.count("in wait_in_fence") == 2
        main_stacks[mode] = _main_thread_stacks(result.stderr)
    # The fork server's own frames are not shown: the stack starts at the program.
    assert main_stacks["forked"] == main_stacks["executed"]
    assert main_stacks["forked"][0].startswith(f'  File "{FAIL}", line')


def _main_thread_stacks(report: str) -> list[str]:
    stacks = re.findall(
        r'Thread "MainThread" \(\d+\):\n(.*?)(?=^Thread |^--- |^ompy run)',
        report,
        re.DOTALL | re.MULTILINE,
    )
    assert len(stacks) == 2, report
    return stacks


def test_ranks_die_and_nothing_is_left_when_the_fork_server_dies(ompy):
    process = ompy.start(["-n", "2", "-q", FAIL])
    deadline = time.monotonic() + 30
    ready = 0
    while ready < 2 and time.monotonic() < deadline:
        line = process.stdout.readline()
        ready += line.endswith("ready\n")
    assert ready == 2
    (server,) = [pid for pid in marked_pids(ompy.marker) if _parent(pid) == process.pid]
    os.kill(server, signal.SIGKILL)
    _out, err = process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGKILL, err
    assert "was killed by signal 9 (SIGKILL)" in err
    assert not marked_pids(ompy.marker)


def _parent(pid: int) -> int:
    """The parent of ``pid``: the fork server is the launcher's only child, ranks are its."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_launcher_without_stdin_runs_the_job_alike(ompy):
    """With ompy run's stdin closed, rank 0 starts without one in both modes."""
    code = "import sys; print(sys.stdin is None)"
    outputs = {}
    for mode in MODES:
        command = [OMPY, "run", "-n", "2", *_mode(mode), "python", "-c", code]
        result = subprocess.run(
            ["sh", "-c", 'exec "$@" <&-', "sh", *command],
            check=False,
            env=ompy.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        outputs[mode] = sorted(result.stdout.splitlines())
    assert outputs["forked"] == outputs["executed"]
