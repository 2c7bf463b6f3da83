"""The default iof module: whole lines, tags, time stamps, partial last lines, per-rank files."""

from __future__ import annotations

import os
import re

import pytest

from ompy.mca.iof.default.forwarder import LineForwarder, rank_output_dir
from ompy.orte.launcher.loop import EventLoop
from ompy.orte.mca.iof import IofOptions


@pytest.fixture
def loop():
    loop = EventLoop()
    yield loop
    loop.close()


def forward(loop, options, writes):
    """Start ``len(writes)`` fake ranks; each writes its chunks to stdout, then closes."""
    iof = LineForwarder(options)
    for rank, chunks in enumerate(writes):
        stdio = iof.stdio_for(rank)
        out_w, err_w = os.dup(stdio.stdout), os.dup(stdio.stderr)
        iof.started(rank, loop)
        for chunk in chunks:
            os.write(out_w, chunk)
        os.write(err_w, b"oops\n")
        os.close(out_w)
        os.close(err_w)
    while iof.open_streams():
        loop.run_once(1.0)
    iof.close(loop)


def read_all(fd):
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return b""


def test_tagged_lines_are_never_split_and_partial_lines_are_flushed(loop):
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    options = IofOptions("j1", 2, tag_output=True, stdout_fd=out_w, stderr_fd=err_w)
    forward(loop, options, [[b"hel", b"lo\nwor", b"ld\nno newline"], [b"a\r\nb\n"]])
    lines = read_all(out_r).decode().split("\n")
    assert lines.pop() == ""  # every forwarded line ends with a newline
    assert sorted(lines) == sorted(
        [
            "[j1,0]<stdout>:hello",
            "[j1,0]<stdout>:world",
            "[j1,0]<stdout>:no newline",
            "[j1,1]<stdout>:a\r",
            "[j1,1]<stdout>:b",
        ]
    )
    errors = read_all(err_r).split(b"\n")
    assert sorted(errors) == [b"", b"[j1,0]<stderr>:oops", b"[j1,1]<stderr>:oops"]
    for fd in (out_r, out_w, err_r, err_w):
        os.close(fd)


def test_untagged_output_is_passed_through_byte_for_byte(loop):
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    forward(loop, IofOptions("j", 1, stdout_fd=out_w, stderr_fd=err_w), [[b"x\ny", b"z"]])
    assert read_all(out_r) == b"x\nyz"
    for fd in (out_r, out_w, err_r, err_w):
        os.close(fd)


def test_output_files_with_time_stamps(loop, tmp_path):
    options = IofOptions("j", 2, timestamp_output=True, output_dir=tmp_path)
    forward(loop, options, [[b"first\n"], [b"second"]])
    stamp = r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\] "
    assert re.fullmatch(stamp + "first\n", (rank_output_dir(tmp_path, 0) / "stdout").read_text())
    assert re.fullmatch(stamp + "second\n", (tmp_path / "1" / "rank.1" / "stdout").read_text())
    assert re.fullmatch(stamp + "oops\n", (tmp_path / "1" / "rank.1" / "stderr").read_text())


def test_only_rank_0_reads_the_launchers_stdin():
    iof = LineForwarder(IofOptions("j", 2))
    assert iof.stdio_for(0).stdin is None
    assert iof.stdio_for(1).stdin is not None
    iof.abandon(0)
    iof.abandon(1)
