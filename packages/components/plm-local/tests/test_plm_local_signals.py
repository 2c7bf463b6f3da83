"""Signals reach a rank and everything it started; a rank does not outlive its launcher.

The launcher's teardown (SIGTERM, then SIGKILL after ``orte_abort_timeout``) relies on this:
a signal sent through the rank's handle reaches its whole process group, even after the rank
itself has exited, and a launcher killed with SIGKILL takes its ranks with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from .conftest import MARKER, WAIT, exited, python, read_line, wait_exit

pytestmark = pytest.mark.timeout(30)

#: A rank that starts a child (in its own process group, as any program's children are),
#: reports the child's pid, then sleeps or exits.
WITH_CHILD = """
import signal, subprocess, sys, time
{prelude}
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
{then}
"""


def with_child(prelude: str = "", then: str = "time.sleep(60)") -> str:
    return WITH_CHILD.format(prelude=prelude, then=then)


def start_with_child(spawner, **kwargs):
    """The rank, a pidfd on its child, and the rank's stdout (closed by the caller)."""
    rank, read_end = spawner.spawn_reporting(with_child(**kwargs))
    child = int(read_line(read_end))
    return rank, os.pidfd_open(child), read_end


def test_a_signal_reaches_the_rank_and_its_children(spawner):
    rank, child, read_end = start_with_child(spawner)
    try:
        rank.signal(signal.SIGTERM)
        assert wait_exit(rank) == -signal.SIGTERM
        assert exited(child, WAIT), "the rank's child survived the SIGTERM"
    finally:
        os.close(child)
        os.close(read_end)


def test_sigterm_may_be_ignored_and_sigkill_then_ends_rank_and_children(spawner):
    # An ignored disposition survives exec, so the child ignores SIGTERM as well.
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN)"
    rank, child, read_end = start_with_child(spawner, prelude=ignore)
    try:
        rank.signal(signal.SIGTERM)
        assert not exited(rank.exit_fd(), 0.3), "an ignored SIGTERM ended the rank"
        assert not exited(child, 0.0)
        rank.signal(signal.SIGKILL)
        assert wait_exit(rank) == -signal.SIGKILL
        assert exited(child, WAIT), "the rank's child survived the SIGKILL"
    finally:
        os.close(child)
        os.close(read_end)


def test_a_signal_still_reaches_the_children_of_a_rank_that_has_exited(spawner):
    rank, child, read_end = start_with_child(spawner, then="sys.exit(0)")
    try:
        assert wait_exit(rank) == 0
        assert not exited(child, 0.1), "the child should outlive its parent until signalled"
        rank.signal(signal.SIGKILL)
        assert exited(child, WAIT), "the exited rank's child survived the SIGKILL"
    finally:
        os.close(child)
        os.close(read_end)


def test_signalling_a_rank_that_is_gone_is_harmless(spawner):
    rank = spawner.spawn(python("pass"))
    assert wait_exit(rank) == 0
    rank.signal(signal.SIGTERM)
    rank.release()
    rank.signal(signal.SIGKILL)


def test_a_signal_to_the_launchers_group_does_not_reach_the_ranks(spawner):
    """A Ctrl-C in the terminal goes to the launcher only; it then ends the job in order."""
    rank, read_end = spawner.spawn_reporting(
        "import os, time; print(os.getpgid(0), flush=True); time.sleep(60)"
    )
    try:
        assert int(read_line(read_end)) != os.getpgid(0)
        rank.signal(signal.SIGKILL)
        assert wait_exit(rank) == -signal.SIGKILL
    finally:
        os.close(read_end)


LAUNCHER = textwrap.dedent(
    """
    import subprocess, sys, time
    from pathlib import Path
    from ompy.mca.plm.local.launcher import LocalPlmModule
    from ompy.orte.launcher.job import Node, Placement
    from ompy.orte.mca.plm import Stdio

    rank = LocalPlmModule().spawn(
        Placement(0, Node("localhost", 1), 0, 0, 1, False),
        [sys.executable, "-c", "import time; time.sleep(60)"],
        {"MARKER": "TOKEN"},
        Path.cwd(),
        Stdio(subprocess.DEVNULL, subprocess.DEVNULL, subprocess.DEVNULL),
    )
    print(rank.pid, flush=True)
    time.sleep(60)
    """
)


def test_a_rank_dies_when_its_launcher_is_killed(spawner):
    """PR_SET_PDEATHSIG: even a program that never talks to the launcher cannot outlive it."""
    program = LAUNCHER.replace('"MARKER"', repr(MARKER)).replace("TOKEN", spawner.token)
    launcher = subprocess.Popen(
        [sys.executable, "-c", program],
        stdout=subprocess.PIPE,
        env={**os.environ, MARKER: spawner.token},
    )
    rank_pidfd = None
    try:
        rank_pid = int(read_line(launcher.stdout.fileno()))
        rank_pidfd = os.pidfd_open(rank_pid)
        assert not exited(rank_pidfd, 0.1), "the rank should run while its launcher does"
        launcher.kill()
        assert launcher.wait(WAIT) == -signal.SIGKILL
        assert exited(rank_pidfd, WAIT), "the rank outlived its launcher"
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
        launcher.stdout.close()
        if rank_pidfd is not None:
            os.close(rank_pidfd)
