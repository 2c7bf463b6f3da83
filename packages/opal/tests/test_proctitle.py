"""A process's title, as ``ps`` reads it: command line and command name from /proc."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

SHOW = """
import os, sys
from ompy.opal import proctitle
proctitle.set_title(os.environ["TITLE"], name=sys.argv[1] if len(sys.argv) > 1 else None)
with open("/proc/self/cmdline", "rb") as f:
    print(f.read().rstrip(b"\\0").decode())
with open("/proc/self/comm") as f:
    print(f.read().strip())
print(sys.orig_argv[1])  # the interpreter's copies are untouched
"""


def shown(title: str, *name: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", SHOW, *name],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TITLE": title},
    )
    return done.stdout.splitlines()


def test_the_title_replaces_the_command_line_and_names_the_process():
    title = "ompy rank 3/8 of job abc: python app.py"
    cmdline, comm, argv0 = shown(title, "ompy-rank3")
    assert cmdline == title
    assert comm == "ompy-rank3"
    assert argv0 == "-c"


def test_a_title_longer_than_the_argument_area_is_cut_to_fit():
    long = "x" * 10_000
    cmdline, comm, _ = shown(long)
    assert cmdline and set(cmdline) == {"x"}
    assert len(cmdline) < len(long)
    assert comm == "x" * 15  # the kernel keeps 15 bytes of name


def test_the_name_defaults_to_the_titles_first_word():
    _, comm, _ = shown("ompy-forksrv serving job 12")
    assert comm == "ompy-forksrv"
