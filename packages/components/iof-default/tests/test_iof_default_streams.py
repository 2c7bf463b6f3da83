"""Where the ranks' streams come from and go: per-rank files, stdin for rank 0 only, many ranks
in one event loop without threads, early closing, ranks that never started, and a terminal
that went away."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading

import pytest

from ompy.mca.iof.default.forwarder import DefaultIofModule, rank_output_dir
from ompy.orte.mca.iof import IofOptions

from .conftest import WAIT, pump, start

pytestmark = pytest.mark.timeout(60)


def test_output_files_follow_open_mpis_layout(tmp_path):
    assert rank_output_dir(tmp_path, 12) == tmp_path / "1" / "rank.12"


def test_output_files_receive_each_ranks_streams_instead_of_the_terminal(loop, terminal, tmp_path):
    base = tmp_path / "out" / "deeper"
    iof = DefaultIofModule(terminal.options("j", 3, tag_output=True, output_dir=base))
    ranks = start(iof, loop, 3)
    ranks[0].write(b"zero\n")
    ranks[1].write(b"one, unfinished")
    ranks[1].write(b"trouble\n", "stderr")
    for rank in ranks:
        rank.exit()
    pump(iof, loop)
    assert terminal.out() == terminal.err() == b""
    read = {
        (rank, name): (base / "1" / f"rank.{rank}" / name).read_bytes()
        for rank in range(3)
        for name in ("stdout", "stderr")
    }
    assert read == {
        (0, "stdout"): b"[j,0]<stdout>:zero\n",
        (0, "stderr"): b"",
        (1, "stdout"): b"[j,1]<stdout>:one, unfinished\n",
        (1, "stderr"): b"[j,1]<stderr>:trouble\n",
        (2, "stdout"): b"",  # a rank that wrote nothing still has its (empty) files
        (2, "stderr"): b"",
    }


def test_output_files_replace_those_of_an_earlier_run(loop, tmp_path):
    old = rank_output_dir(tmp_path, 0)
    old.mkdir(parents=True)
    (old / "stdout").write_bytes(b"an earlier, much longer output\n")
    iof = DefaultIofModule(IofOptions("j", 1, timestamp_output=True, output_dir=tmp_path))
    (rank,) = start(iof, loop, 1)
    rank.write(b"new\n")
    rank.exit()
    pump(iof, loop)
    text = (old / "stdout").read_text()
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\] new\n", text)


def test_only_rank_0_reads_the_launchers_stdin_the_others_read_nothing():
    iof = DefaultIofModule(IofOptions("j", 3))
    try:
        assert iof.stdio_for(0).stdin is None  # inherited: a terminal keeps working
        assert iof.stdio_for(1).stdin == subprocess.DEVNULL
        assert iof.stdio_for(2).stdin == subprocess.DEVNULL
    finally:
        for rank in range(3):
            iof.abandon(rank)


LAUNCHER = textwrap.dedent(
    """
    import subprocess, sys
    from ompy.mca.iof.default.forwarder import DefaultIofModule
    from ompy.opal.eventloop import EventLoop
    from ompy.orte.mca.iof import IofOptions

    loop = EventLoop()
    iof = DefaultIofModule(IofOptions("j", 2, tag_output=True))
    ranks = []
    for rank in range(2):
        stdio = iof.stdio_for(rank)
        ranks.append(subprocess.Popen(
            [sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"],
            stdin=stdio.stdin, stdout=stdio.stdout, stderr=stdio.stderr,
        ))
        iof.started(rank, loop)
    while iof.open_streams():
        loop.run_once(1.0)
    iof.close(loop)
    sys.exit(max(rank.wait() for rank in ranks))
    """
)


def test_real_ranks_rank_0_reads_what_the_launcher_is_given():
    result = subprocess.run(
        [sys.executable, "-c", LAUNCHER],
        input=b"hello\nworld\n",
        capture_output=True,
        timeout=WAIT * 2,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert sorted(result.stdout.decode().splitlines()) == [
        "[j,0]<stdout>:'hello\\nworld\\n'",
        "[j,1]<stdout>:''",
    ]


def test_thirty_two_ranks_are_served_by_the_one_loop_without_threads(loop, terminal):
    threads = threading.active_count()
    iof = DefaultIofModule(terminal.options("j", 32, tag_output=True))
    ranks = start(iof, loop, 32)
    assert iof.open_streams() == 64
    for rank in ranks:
        rank.write(f"from {rank.rank}\n".encode())
        rank.write(f"err {rank.rank}\n".encode(), "stderr")
    # Nothing is forwarded behind the loop's back: no thread reads the pipes.
    assert threading.active_count() == threads
    assert terminal.out() == b""
    loop.run_once(1.0)
    assert len(terminal.out().splitlines()) + len(terminal.err().splitlines()) == 64
    for rank in ranks[::2]:
        rank.exit()
    loop.run_once(1.0)
    assert iof.open_streams() == 32
    for rank in ranks[1::2]:
        rank.exit()
    pump(iof, loop)
    assert threading.active_count() == threads
    assert sorted(terminal.out().splitlines()) == sorted(
        f"[j,{r}]<stdout>:from {r}".encode() for r in range(32)
    )
    assert sorted(terminal.err().splitlines()) == sorted(
        f"[j,{r}]<stderr>:err {r}".encode() for r in range(32)
    )


def test_closing_early_forwards_what_is_waiting_and_closes_every_stream(loop, terminal, tmp_path):
    """At teardown the launcher closes the forwarder while a rank's child may still hold the
    pipe open: what was written so far, a partial line included, is still forwarded."""
    iof = DefaultIofModule(terminal.options(tag_output=True))
    (rank,) = start(iof, loop, 1)
    rank.write(b"done\nhalf")
    iof.close(loop)
    assert iof.open_streams() == 0
    assert terminal.out() == b"[j1,0]<stdout>:done\n[j1,0]<stdout>:half\n"
    with pytest.raises(BrokenPipeError):  # the forwarder closed its read end
        os.write(rank.stdout, b"more\n")
    rank.exit()


def test_ranks_that_never_started_are_released(loop, tmp_path):
    iof = DefaultIofModule(IofOptions("j", 3, output_dir=tmp_path))
    start(iof, loop, 1)[0].exit()
    iof.stdio_for(1)
    iof.abandon(1)  # the launcher could not start rank 1
    iof.stdio_for(2)  # the launch was interrupted before rank 2 started
    iof.close(loop)  # releases rank 2's pipes and files; the fd check verifies it
    assert iof.open_streams() == 0


def test_a_terminal_that_went_away_does_not_stop_the_job(loop):
    """'ompy run ... | head': output is dropped, but the pipes are still read to their end so
    that no rank blocks on a full pipe."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    iof = DefaultIofModule(IofOptions("j", 1, stdout_fd=write_end))
    (rank,) = start(iof, loop, 1)
    rank.write(b"line\n" * 50_000)  # several times what a pipe holds
    rank.exit()
    pump(iof, loop)
    os.close(write_end)
