"""``python -m ompy``: the options, the four ways to name a program, and what ends the job."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from ompy.run import parse_command_line


def run_ompy(
    *args: str, stdin: str = "", cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ompy", *args],
        check=False,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_version_prefix_and_mpi_versions() -> None:
    from ompy.ompi import __version__

    assert run_ompy("--version").stdout == f"ompy {__version__}\n"
    installed = Path(importlib.util.find_spec("ompy.run").origin).parent  # editable or not
    assert Path(run_ompy("--prefix").stdout.strip()) == installed
    assert run_ompy("--mpi-std-version").stdout == "MPI 4.1\n"
    assert run_ompy("--mpi-lib-version").stdout.startswith("ompy ")


def test_help_lists_options() -> None:
    result = run_ompy("-h")
    assert result.returncode == 0
    for option in ("--prefix", "--version", "--mpi-std-version", "--mpi-lib-version", "-rc"):
        assert option in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "unknown option: --bogus"),
        ([], "no path specified"),
        (["-c"], "argument expected for option: -c"),
        (["-m"], "argument expected for option: -m"),
        (["--rc"], "argument expected for option: --rc"),
        (["--rc", "initialize"], "cannot parse rc option 'initialize'"),
        (["--rc", "nosuch=1", "-c", "pass"], "unexpected argument 'nosuch'"),
    ],
)
def test_bad_command_lines_fail_with_usage(args: list[str], message: str) -> None:
    result = run_ompy(*args)
    assert result.returncode == 1
    assert message in result.stderr
    assert "usage:" in result.stderr


def test_rc_options_are_parsed_as_literals() -> None:
    rc, command = parse_command_line(
        ["--rc", "initialize=False,thread_level=single", "-rc=irecv_bufsz=7", "x.py", "-v"]
    )
    assert rc == {"initialize": False, "thread_level": "single", "irecv_bufsz": 7}
    assert command == ["x.py", "-v"]


def test_rc_reaches_the_program() -> None:
    result = run_ompy(
        "--rc", "initialize=False", "-c", "from ompy import MPI; print(MPI.Is_initialized())"
    )
    assert result.stdout == "False\n", result.stderr


def test_script_module_command_and_stdin(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    script.write_text("import sys; print(__name__, sys.argv[1:], sys.path[0])\n")
    result = run_ompy(str(script), "a", "-b", cwd=Path("/"))
    assert result.stdout == f"__main__ ['a', '-b'] {tmp_path.resolve()}\n", result.stderr
    module = run_ompy("-m", "json.tool", "--compact", stdin='{"a": [1, 2]}')
    assert module.stdout == '{"a":[1,2]}\n', module.stderr
    command = run_ompy("-c", "import sys; print(__name__, sys.argv)", "x")
    assert command.stdout == "__main__ ['-c', 'x']\n"
    piped = run_ompy("-", "y", stdin="import sys; print(__name__, sys.argv)")
    assert piped.stdout == "__main__ ['-', 'y']\n"


def test_failure_without_mpi_is_an_ordinary_python_failure() -> None:
    result = run_ompy("-c", "raise KeyError('k')")
    assert result.returncode == 1
    assert "KeyError: 'k'" in result.stderr
    assert run_ompy("-c", "raise SystemExit(5)").returncode == 5
