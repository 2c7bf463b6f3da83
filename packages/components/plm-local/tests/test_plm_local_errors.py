"""A rank that cannot be started is a LaunchError that names the rank and what was wrong, with
the shell's exit code (127: not found, 126: cannot be executed); nothing is left behind."""

from __future__ import annotations

import os
import sys

import pytest

from ompy.orte.launcher.errors import LaunchError

from .conftest import wait_exit

pytestmark = pytest.mark.timeout(30)


def spawn_error(spawner, argv, **kwargs) -> LaunchError:
    started = len(spawner.ranks)
    with pytest.raises(LaunchError) as caught:
        spawner.spawn(argv, rank=3, **kwargs)
    assert len(spawner.ranks) == started
    return caught.value


def test_a_program_that_does_not_exist(spawner):
    error = spawn_error(spawner, ["/nonexistent/ompy-test-program", "arg"])
    assert error.exit_code == 127
    assert str(error).startswith("cannot start rank 3:")
    assert "No such file or directory: '/nonexistent/ompy-test-program'" in str(error)


def test_a_bare_name_is_looked_up_on_the_ranks_path(spawner, tmp_path):
    program = tmp_path / "ompy-test-tool"
    program.write_text("#!/bin/sh\nexit 7\n")
    program.chmod(0o755)
    assert wait_exit(spawner.spawn(["ompy-test-tool"], env={"PATH": str(tmp_path)})) == 7
    error = spawn_error(spawner, ["ompy-test-tool"], env={"PATH": "/nonexistent"})
    assert error.exit_code == 127
    assert "'ompy-test-tool'" in str(error)


def test_a_file_without_execute_permission(spawner, tmp_path):
    program = tmp_path / "script.sh"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o644)
    error = spawn_error(spawner, [str(program)])
    assert error.exit_code == 126
    assert f"Permission denied: '{program}'" in str(error)


def test_a_directory(spawner, tmp_path):
    error = spawn_error(spawner, [str(tmp_path)])
    assert error.exit_code == 126
    assert f"'{tmp_path}'" in str(error)


def test_an_executable_file_that_is_not_a_program(spawner, tmp_path):
    program = tmp_path / "notes.txt"
    program.write_text("echo this has no '#!' line\n")
    program.chmod(0o755)
    error = spawn_error(spawner, [str(program)])
    assert error.exit_code == 126
    assert str(error) == (
        f"cannot start rank 3: '{program}' is not a program this system can execute "
        f"(a script needs a '#!' line)"
    )


@pytest.mark.parametrize("relative", [False, True])
def test_a_script_whose_interpreter_does_not_exist(spawner, tmp_path, relative):
    """The kernel says "no such file" naming the script, which exists: say what is missing."""
    program = tmp_path / "job.sh"
    program.write_text("#!/nonexistent/interpreter\n")
    program.chmod(0o755)
    name = "./job.sh" if relative else str(program)
    error = spawn_error(spawner, [name], cwd=tmp_path)
    assert error.exit_code == 127
    assert str(error) == (
        f"cannot start rank 3: '{name}' exists, but the interpreter named on its '#!' "
        f"line (or the loader it needs) does not"
    )


def test_a_working_directory_that_does_not_exist(spawner, tmp_path):
    missing = tmp_path / "gone"
    error = spawn_error(spawner, [sys.executable, "-c", "pass"], cwd=missing)
    assert error.exit_code == 1
    assert str(error) == (
        f"cannot start rank 3 in its working directory '{missing}': No such file or directory"
    )


def test_a_failed_start_leaves_no_descriptor_open(spawner):
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        spawn_error(spawner, ["/nonexistent/ompy-test-program"])
    assert len(os.listdir("/proc/self/fd")) == before
