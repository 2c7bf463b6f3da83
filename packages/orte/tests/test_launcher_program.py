"""Which argv a rank executes for what the user typed."""

from __future__ import annotations

import sys

import pytest

from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.program import resolve_program


def test_a_python_script_runs_under_this_interpreter(tmp_path):
    (tmp_path / "app.py").write_text("")
    argv = resolve_program(["app.py", "--x"], tmp_path)
    assert argv == (sys.executable, str(tmp_path / "app.py"), "--x")


@pytest.mark.parametrize("name", ["python", "python3", "python3.11"])
def test_a_bare_python_means_this_interpreter(tmp_path, name):
    assert resolve_program([name, "-m", "mod"], tmp_path) == (sys.executable, "-m", "mod")


def test_other_programs_are_found_on_the_ranks_path(tmp_path):
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert resolve_program(["tool", "a"], tmp_path, {"PATH": str(tool.parent)}) == (str(tool), "a")


def test_missing_and_non_executable_programs_have_shell_codes(tmp_path):
    with pytest.raises(LaunchError, match="not found on PATH") as missing:
        resolve_program(["no-such-tool"], tmp_path, {"PATH": str(tmp_path)})
    assert missing.value.exit_code == 127
    (tmp_path / "data").write_text("")
    with pytest.raises(LaunchError, match="not executable") as plain:
        resolve_program(["./data"], tmp_path)
    assert plain.value.exit_code == 126
