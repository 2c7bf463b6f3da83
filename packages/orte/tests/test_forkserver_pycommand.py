"""Which command lines the fork server runs, and what the forked program's sys.argv is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ompy.orte.launcher.forkserver.pycommand import PythonCommand, classify, is_this_interpreter

PY = sys.executable


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("print('hi')\n")
    (tmp_path / "noext").write_text("print('hi')\n")
    (tmp_path / "bundle.zip").write_bytes(b"PK\x03\x04rest")
    (tmp_path / "cached.pyc").write_bytes(b"\x00" * 16)
    (tmp_path / "pkg").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([PY, "-c", "pass", "x"], PythonCommand(PY, (), "code", "pass", ("x",))),
        ([PY, "-cpass"], PythonCommand(PY, (), "code", "pass", ())),
        ([PY, "-m", "mod", "-v"], PythonCommand(PY, (), "module", "mod", ("-v",))),
        ([PY, "-mmod"], PythonCommand(PY, (), "module", "mod", ())),
        ([PY, "app.py", "-c", "x"], PythonCommand(PY, (), "script", "app.py", ("-c", "x"))),
        ([PY, "noext"], PythonCommand(PY, (), "script", "noext", ())),
        ([PY, "-u", "-B", "app.py"], PythonCommand(PY, ("-u", "-B"), "script", "app.py", ())),
        ([PY, "-uOO", "-c", "1"], PythonCommand(PY, ("-uOO",), "code", "1", ())),
        ([PY, "-W", "error", "-c", "1"], PythonCommand(PY, ("-W", "error"), "code", "1", ())),
        ([PY, "-Wignore", "-c", "1"], PythonCommand(PY, ("-Wignore",), "code", "1", ())),
        ([PY, "-X", "dev", "-m", "m"], PythonCommand(PY, ("-X", "dev"), "module", "m", ())),
        ([PY, "-Xutf8", "-m", "m"], PythonCommand(PY, ("-Xutf8",), "module", "m", ())),
    ],
)
def test_plain_forms_of_this_interpreter_qualify(cwd, argv, expected):
    assert classify(argv, cwd) == expected


def test_an_absolute_script_path_qualifies(cwd):
    script = str(cwd / "app.py")
    assert classify([PY, script], Path("/")) == PythonCommand(PY, (), "script", script, ())


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["/bin/true"],
        ["/bin/sh", "-c", "echo"],
        [PY],  # interactive
        [PY, "-"],  # program from stdin
        [PY, "-i", "app.py"],  # interactive afterwards
        [PY, "-c"],  # missing code
        [PY, "-m"],  # missing module
        [PY, "-m", ""],
        [PY, "--", "app.py"],
        [PY, "-h"],
        [PY, "-V"],
        [PY, "-x", "app.py"],  # skips the first line: not understood here
        [PY, "-X", "importtime", "app.py"],  # output would differ: the server imports once
        [PY, "-X"],
        [PY, "-W"],
        [PY, "missing.py"],
        [PY, "pkg"],  # a directory runs its __main__.py
        [PY, "bundle.zip"],
        [PY, "cached.pyc"],
    ],
)
def test_anything_else_is_executed(cwd, argv):
    assert classify(argv, cwd) is None


def test_another_path_to_the_interpreter_in_a_virtual_environment_is_another_program(
    tmp_path, monkeypatch
):
    link = tmp_path / "python"
    link.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "prefix", "/some/venv")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert not is_this_interpreter(str(link))
    assert is_this_interpreter(sys.executable)
    monkeypatch.setattr(sys, "prefix", "/usr")
    assert is_this_interpreter(str(link))  # outside a venv the same binary is the same Python


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        (PythonCommand(PY, (), "code", "pass", ("a", "b")), ["-c", "a", "b"]),
        (PythonCommand(PY, (), "module", "m", ("a",)), ["-m", "a"]),
        (PythonCommand(PY, ("-u",), "script", "dir/app.py", ("a",)), ["dir/app.py", "a"]),
    ],
)
def test_sys_argv_is_what_the_interpreter_sets(command, argv):
    assert command.sys_argv() == argv
