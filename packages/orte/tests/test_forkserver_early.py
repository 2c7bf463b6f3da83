"""The early guess of the ``ompy`` executable: its scanner reads ``ompy run`` as click does,
and a server started on a guess is used only when it fits the planned job exactly."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
import pytest

from ompy.orte.cli.run import run
from ompy.orte.cli.run_options import RUN_OPTIONS
from ompy.orte.launcher.forkserver import early
from ompy.orte.launcher.forkserver.client import environment_fits
from ompy.orte.launcher.forkserver.pycommand import classify
from ompy.orte.launcher.plan import RunOptions, plan_job
from ompy.orte.launcher.report import Reporter
from ompy.orte.launcher.runner import rank_base_environment
from ompy.orte.launcher.start import launcher_registry, mca_overrides

pytestmark = pytest.mark.timeout(60)


def test_the_click_command_is_built_from_the_table_the_scanner_reads():
    """An option added to the click command by hand, not through run_options, fails here."""
    from_click = set()
    for param in run.params:
        if not isinstance(param, click.Option) or param.name == "help":
            continue
        values = 0 if param.is_flag else param.nargs
        from_click.add((param.name, tuple(param.opts), values, tuple(param.secondary_opts)))
    declared = {(o.dest, o.names, o.values, o.negations) for o in RUN_OPTIONS}
    assert from_click == declared


def planned(words: list[str], monkeypatch, cwd: Path):
    """What ``ompy run WORDS`` plans, through click's own parsing."""
    monkeypatch.chdir(cwd)
    context = run.make_context("run", list(words))
    options = RunOptions(**context.params)
    registry = launcher_registry(mca_overrides(options.mca))
    return plan_job(options, registry, Reporter(quiet=True))


@pytest.mark.parametrize(
    "words",
    [
        ["-n", "2", "python", "-c", "pass", "arg"],
        ["-n2", "--oversubscribe", "python", "-u", "-m", "json.tool"],
        ["--np=3", "-q", "--tag-output", "-x", "EXTRA=1", "-xHOME", "python", "-c", "pass"],
        ["-n", "1", "--mca", "btl", "self", "--wdir", "sub", "app.py", "--flag"],
        ["-np", "2", "--timeout", "5", "--map-by", "node", "--", "python", "app.py"],
    ],
)
def test_the_guess_is_what_the_launcher_plans(words, monkeypatch, tmp_path):
    (tmp_path / "app.py").write_text("pass\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "app.py").write_text("pass\n")
    plan = planned(words, monkeypatch, tmp_path)
    guess = early.scan_run(words, os.environ)
    assert guess is not None
    assert guess.argv == plan.app.argv
    assert guess.cwd == plan.app.cwd
    assert environment_fits(guess.env, rank_base_environment(plan.app.env))
    assert classify(guess.argv, guess.cwd) is not None


@pytest.mark.parametrize(
    "words",
    [
        [],
        ["-n", "2"],  # no program
        ["--unknown", "python", "-c", "pass"],
        ["-n"],
        ["--mca", "btl"],
        ["--mca", "plm_local_fork_server", "0", "python", "-c", "pass"],
        ["-x", "SURELY_NOT_SET_ANYWHERE", "python", "-c", "pass"],
        ["--wdir", "/no/such/directory", "python", "-c", "pass"],
        ["-n", "2", "no-such-program-anywhere"],
        ["-h"],
    ],
)
def test_no_guess_for_what_the_scanner_does_not_understand(words):
    assert early.scan_run(words, os.environ) is None


def test_no_guess_when_the_environment_turns_the_fork_server_off():
    environ = {**os.environ, "OMPY_MCA_plm_local_fork_server": "false"}
    assert early.scan_run(["python", "-c", "pass"], environ) is None


def _start(words: list[str]) -> early.ForkServerClient:
    early.start_early(["run", *words])
    server = early._early
    assert server is not None
    return server


def test_a_fitting_early_server_is_taken_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    server = _start(["-n", "1", "python", "-c", "pass"])
    try:
        command = classify([sys.executable, "-c", "pass"], tmp_path)
        env = {k: v for k, v in os.environ.items() if k != "OMPY_MCA_CLI_NAMES"}
        env["OMPY_MCA_btl"] = "self"  # MCA values are read when frameworks open: they may differ
        assert early.take_early(command, env, tmp_path) is server
        assert early.take_early(command, env, tmp_path) is None
    finally:
        server.close()


@pytest.mark.parametrize("change", ["program", "cwd", "env"])
def test_an_early_server_that_does_not_fit_is_ended(tmp_path, monkeypatch, change):
    monkeypatch.chdir(tmp_path)
    server = _start(["-n", "1", "python", "-c", "pass"])
    process = server._process
    code = "print()" if change == "program" else "pass"
    cwd = Path("/") if change == "cwd" else tmp_path
    env = {k: v for k, v in os.environ.items() if k != "OMPY_MCA_CLI_NAMES"}
    if change == "env":
        env["PYTHONWARNINGS"] = "error"
    command = classify([sys.executable, "-c", code], cwd)
    assert early.take_early(command, env, cwd) is None
    assert process.poll() is not None  # ended and reaped


def test_discarding_ends_an_untaken_server(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    process = _start(["-n", "1", "python", "-c", "pass"])._process
    early.discard_early()
    assert process.poll() is not None
    early.discard_early()  # nothing left: nothing to do


def test_other_subcommands_start_nothing():
    early.start_early(["info"])
    early.start_early([])
    assert early._early is None


#: What the ``ompy`` executable does first, in a fresh interpreter: start the server on a guess
#: (forked where that is sound), have it fork rank 0 of ``python -c CODE``, wait for its exit.
ENTRY = """
import os, select, subprocess, sys
from ompy.orte.launcher.forkserver import early
from ompy.orte.mca.plm import Stdio
early.start_early(["run", *sys.argv[1:]], fork=True)
server = early._early
started_as = type(server._process).__name__
rank = server.spawn(0, dict(os.environ), Stdio(subprocess.DEVNULL, None, None))
while rank.poll() is None:
    select.select([rank.exit_fd()], [], [], 10)
process = server._process
server.close()
print(started_as, rank.poll(), process.poll())
"""
CODE = "import sys; print('rank ran with', sys.argv, flush=True); sys.exit(3)"


def _entry(tmp_path: Path, *words: str) -> list[str]:
    import subprocess

    result = subprocess.run(
        [sys.executable, "-c", ENTRY, *words],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_at_the_executables_start_the_server_is_this_process_forked(tmp_path):
    lines = _entry(tmp_path, "-n", "1", sys.executable, "-c", CODE, "x")
    assert lines == ["rank ran with ['-c', 'x']", "_ForkedServer 3 0"]


@pytest.mark.parametrize(
    "words",
    [
        ["-x", "EXTRA=1", sys.executable, "-c", CODE],  # the job's environment differs
        [sys.executable, "-u", "-c", CODE],  # interpreter options act at start-up
    ],
    ids=["environment", "options"],
)
def test_otherwise_the_server_is_a_new_interpreter(tmp_path, words):
    lines = _entry(tmp_path, "-n", "1", *words)
    assert lines[-1] == "Popen 3 0"
