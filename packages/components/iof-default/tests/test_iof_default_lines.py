"""The default forwarder writes the ranks' output as whole lines, with Open MPI's tags and
ISO 8601 time stamps when asked, and never mixes two ranks' text within a line."""

from __future__ import annotations

import datetime
import re
import socket
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.mca.iof.default import DefaultIofComponent
from ompy.mca.iof.default.forwarder import MAX_LINE, DefaultIofModule
from ompy.opal.eventloop import EventLoop
from ompy.opal.mca.params import Registry
from ompy.orte.mca.iof import IofOptions
from ompy.orte.mca.iof.base import select_iof

from .conftest import Terminal, pump, start

pytestmark = pytest.mark.timeout(60)

STAMP = r"\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})\] "


def test_the_component_offers_a_line_forwarder_for_the_jobs_options():
    component = DefaultIofComponent(Registry(environ={}, files=[]))
    component.register_params()
    component.open()
    options = IofOptions("j1", 4, tag_output=True)
    offer = component.query(options)
    assert offer is not None and offer.priority == 50
    assert isinstance(offer.module, DefaultIofModule)
    assert offer.module.options is options


def test_the_iof_framework_selects_it_by_name():
    registry = Registry(environ={"OMPY_MCA_iof": "default"}, files=[])
    opened, module = select_iof(registry, IofOptions("j1", 1))
    try:
        assert isinstance(module, DefaultIofModule)
    finally:
        opened.close()


def test_untagged_output_is_passed_through_byte_for_byte(loop, terminal):
    iof = DefaultIofModule(terminal.options())
    (rank,) = start(iof, loop, 1)
    rank.write(b"x\ny")
    loop.run_once(1.0)
    rank.write(b"z\r\n\nno newline at the end", "stdout")
    rank.write(b"warning\n", "stderr")
    rank.exit()
    pump(iof, loop)
    assert terminal.out() == b"x\nyz\r\n\nno newline at the end"
    assert terminal.err() == b"warning\n"


def test_tagged_lines_carry_jobid_rank_and_stream(loop, terminal):
    iof = DefaultIofModule(terminal.options("jx7", 2, tag_output=True))
    ranks = start(iof, loop, 2)
    ranks[0].write(b"hel")
    loop.run_once(1.0)
    ranks[0].write(b"lo\n\ncr\r\nlast")
    ranks[1].write(b"oops\n", "stderr")
    for rank in ranks:
        rank.exit()
    pump(iof, loop)
    assert terminal.out() == (
        b"[jx7,0]<stdout>:hello\n[jx7,0]<stdout>:\n[jx7,0]<stdout>:cr\r\n[jx7,0]<stdout>:last\n"
    )
    assert terminal.err() == b"[jx7,1]<stderr>:oops\n"


def test_a_partial_line_waits_for_its_newline(loop, terminal):
    iof = DefaultIofModule(terminal.options(tag_output=True))
    (rank,) = start(iof, loop, 1)
    rank.write(b"complete\nhalf")
    loop.run_once(1.0)
    assert terminal.out() == b"[j1,0]<stdout>:complete\n"
    rank.write(b" and half\n")
    loop.run_once(1.0)
    assert terminal.out() == b"[j1,0]<stdout>:complete\n[j1,0]<stdout>:half and half\n"
    rank.exit()
    pump(iof, loop)


def test_time_stamps_are_local_iso_8601_with_microseconds_before_the_tag(loop, terminal):
    iof = DefaultIofModule(terminal.options(tag_output=True, timestamp_output=True))
    (rank,) = start(iof, loop, 1)
    before = datetime.datetime.now()
    rank.write(b"one\ntwo")
    rank.exit()
    pump(iof, loop)
    after = datetime.datetime.now()
    lines = terminal.out().decode().splitlines()
    assert len(lines) == 2
    for line, text in zip(lines, ("one", "two"), strict=True):
        match = re.fullmatch(STAMP + re.escape(f"[j1,0]<stdout>:{text}"), line)
        assert match, line
        assert before <= datetime.datetime.fromisoformat(match.group(1)) <= after


def test_time_stamps_without_tags(loop, terminal):
    iof = DefaultIofModule(terminal.options(timestamp_output=True))
    (rank,) = start(iof, loop, 1)
    rank.write(b"a\nb\n", "stderr")
    rank.exit()
    pump(iof, loop)
    assert re.fullmatch(f"{STAMP}a\n{STAMP}b\n", terminal.err().decode())
    assert terminal.out() == b""


def test_every_write_holds_whole_lines_of_one_rank(loop):
    """Each write to the terminal is one message of a SEQPACKET socket: none may end mid-line."""
    reader, writer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with reader, writer:
        options = IofOptions("j", 3, tag_output=True, stdout_fd=writer.fileno())
        iof = DefaultIofModule(options)
        ranks = start(iof, loop, 3)
        expected = {rank.rank: [f"rank {rank.rank} line {i}" for i in range(5)] for rank in ranks}
        for rank in ranks:  # every line arrives in two pieces, between which the loop runs
            for line in expected[rank.rank]:
                data = f"{line}\n".encode()
                rank.write(data[:4])
                loop.run_once(0.0)
                rank.write(data[4:])
        for rank in ranks:
            rank.exit()
        pump(iof, loop)
        writer.shutdown(socket.SHUT_WR)
        seen: dict[int, list[str]] = {0: [], 1: [], 2: []}
        while message := reader.recv(1 << 16):
            assert message.endswith(b"\n"), message
            for line in message.decode().splitlines():
                tag, text = re.fullmatch(r"\[j,(\d)\]<stdout>:(.*)", line).groups()
                seen[int(tag)].append(text)
        assert seen == expected


def test_a_line_longer_than_the_limit_is_forwarded_in_pieces_before_its_end(loop, terminal):
    """A rank that never writes a newline cannot make the launcher buffer without bound."""
    iof = DefaultIofModule(terminal.options())
    (rank,) = start(iof, loop, 1)
    rank.write(b"x" * (2 * MAX_LINE))
    for _ in range(8):
        loop.run_once(0.1)
    assert len(terminal.out()) >= MAX_LINE
    rank.write(b"\n")
    rank.exit()
    pump(iof, loop)
    assert terminal.out() == b"x" * (2 * MAX_LINE) + b"\n"


def test_tagged_pieces_of_an_overlong_line_each_end_their_own_line(loop, terminal):
    iof = DefaultIofModule(terminal.options(tag_output=True))
    (rank,) = start(iof, loop, 1)
    rank.write(b"y" * (MAX_LINE + 10) + b"\n")
    rank.exit()
    pump(iof, loop)
    lines = terminal.out().split(b"\n")
    assert lines.pop() == b""
    assert all(line.startswith(b"[j1,0]<stdout>:y") for line in lines)
    assert b"".join(line.removeprefix(b"[j1,0]<stdout>:") for line in lines) == b"y" * (
        MAX_LINE + 10
    )


lines_of_rank = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=6)


@settings(max_examples=40, deadline=None)
@given(
    texts=st.lists(lines_of_rank, min_size=1, max_size=4),
    cuts=st.lists(st.integers(1, 30), min_size=1, max_size=8),
    picks=st.lists(st.integers(0, 1000), min_size=1, max_size=16),
)
def test_any_chunking_and_interleaving_keeps_each_ranks_lines_whole_and_in_order(
    texts, cuts, picks
):
    """Ranks write their lines in arbitrary pieces, in arbitrary order, with the loop running
    in between or not; with tags, each rank's forwarded lines are exactly the lines it wrote."""
    with tempfile.TemporaryDirectory() as directory:
        loop = EventLoop()
        terminal = Terminal(Path(directory))
        iof = DefaultIofModule(terminal.options("h", len(texts), tag_output=True))
        ranks = start(iof, loop, len(texts))
        try:
            pending = []
            for rank, lines in zip(ranks, texts, strict=True):
                data = b"".join(line + b"\n" for line in lines)
                pieces, i = [], 0
                while i < len(data):
                    step = cuts[len(pieces) % len(cuts)]
                    pieces.append(data[i : i + step])
                    i += step
                pending.append((rank, pieces))
            turn = 0
            while busy := [p for p in pending if p[1]]:
                pick = picks[turn % len(picks)]
                turn += 1
                rank, pieces = busy[pick % len(busy)]
                rank.write(pieces.pop(0))
                if pick % 2:
                    loop.run_once(0.0)
            for rank in ranks:
                rank.exit()
            pump(iof, loop)
            seen: list[list[bytes]] = [[] for _ in texts]
            for line in terminal.out().split(b"\n")[:-1]:
                tag, text = re.fullmatch(rb"\[h,(\d)\]<stdout>:(.*)", line, re.DOTALL).groups()
                seen[int(tag)].append(text)
            assert seen == texts
        finally:
            for rank in ranks:
                rank.exit()
            iof.close(loop)
            terminal.close()
            loop.close()
