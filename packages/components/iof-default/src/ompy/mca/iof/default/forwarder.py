"""Line-buffered forwarding of the ranks' stdout and stderr.

Each rank writes into two pipes whose read ends sit in the launcher's event loop, so any number
of ranks costs no thread.  Output is cut into lines and every line is written with one
``write`` call, so lines of different ranks never mix mid-line; a partial line waits in a
per-stream buffer until its newline arrives, and is flushed as it is at end-of-file.  Presentation:

* ``--tag-output`` prefixes each line with ``[jobid,rank]<stdout>:`` or ``<stderr>:`` (Open MPI's
  format, with ompy's job id).
* ``--timestamp-output`` prefixes each line with the local time it was read, in ISO 8601 with
  microseconds, in brackets: ``[2026-01-31T12:00:00.123456] ``; it comes before the tag.
* ``--output-filename DIR`` writes rank N's streams to ``DIR/1/rank.N/stdout`` and
  ``DIR/1/rank.N/stderr`` (Open MPI's layout; ``1`` is the job number within the launcher)
  instead of the terminal, with the same prefixes if they were asked for.

Standard input: rank 0 inherits the launcher's stdin (ranks run on this host, so no copying is
needed and a terminal keeps working); every other rank reads ``/dev/null``.
"""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

import attrs

from ompy.opal.eventloop import EventLoop
from ompy.orte.mca.iof import IofModule, IofOptions
from ompy.orte.mca.plm import Stdio

STREAMS = ("stdout", "stderr")
#: A line longer than this is forwarded in pieces rather than buffered without bound.
MAX_LINE = 1 << 16
_READ_SIZE = 1 << 16


def rank_output_dir(base: Path, rank: int) -> Path:
    """Where ``--output-filename base`` puts the files of ``rank``."""
    return base / "1" / f"rank.{rank}"


@attrs.define(eq=False)
class _Sink:
    """A destination file descriptor; writing stops quietly once the reader went away."""

    fd: int
    owned: bool
    broken: bool = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self.broken:
            try:
                written = os.write(self.fd, view)
            except BrokenPipeError:
                self.broken = True  # e.g. 'ompy run ... | head': keep the job running, drop output
                return
            except InterruptedError:
                continue
            view = view[written:]

    def close(self) -> None:
        if self.owned:
            os.close(self.fd)


@attrs.define(eq=False)
class _Stream:
    rank: int
    name: str
    fd: int
    sink: _Sink
    tag: bytes
    partial: bytearray = attrs.field(factory=bytearray)


class DefaultIofModule(IofModule):
    """The iof module of the ``default`` component (see the module documentation)."""

    def __init__(self, options: IofOptions) -> None:
        self.options = options
        self._child_ends: dict[int, tuple[int, int]] = {}
        self._read_ends: dict[int, tuple[int, int]] = {}
        self._rank_sinks: dict[int, tuple[_Sink, _Sink]] = {}
        self._streams: dict[int, _Stream] = {}
        self._loop: EventLoop | None = None
        self._stdout = _Sink(options.stdout_fd, owned=False)
        self._stderr = _Sink(options.stderr_fd, owned=False)

    # -- IofModule ----------------------------------------------------------------------------

    def stdio_for(self, rank: int) -> Stdio:
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        self._read_ends[rank] = (out_r, err_r)
        self._child_ends[rank] = (out_w, err_w)
        self._rank_sinks[rank] = self._sinks_for(rank)
        stdin = None if rank == 0 else subprocess.DEVNULL
        return Stdio(stdin, out_w, err_w)

    def started(self, rank: int, loop: EventLoop) -> None:
        self._loop = loop
        for fd in self._child_ends.pop(rank):
            os.close(fd)
        sinks = self._rank_sinks.pop(rank)
        for name, fd, sink in zip(STREAMS, self._read_ends.pop(rank), sinks, strict=True):
            os.set_blocking(fd, False)
            tag = (
                f"[{self.options.jobid},{rank}]<{name}>:".encode()
                if self.options.tag_output
                else b""
            )
            self._streams[fd] = _Stream(rank, name, fd, sink, tag)
            loop.add_reader(fd, self._on_readable)

    def abandon(self, rank: int) -> None:
        for fd in (*self._child_ends.pop(rank, ()), *self._read_ends.pop(rank, ())):
            os.close(fd)
        for sink in self._rank_sinks.pop(rank, ()):
            sink.close()

    def open_streams(self) -> int:
        return len(self._streams)

    def close(self, loop: EventLoop) -> None:
        for fd in list(self._streams):
            self._drain(fd)
            self._finish(fd, loop)
        for rank in list(self._child_ends):
            self.abandon(rank)

    # -- reading ------------------------------------------------------------------------------

    def _on_readable(self, fd: int) -> None:
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self._consume(self._streams[fd], data)
        else:
            assert self._loop is not None
            self._finish(fd, self._loop)

    def _drain(self, fd: int) -> None:
        """Read whatever is left in the pipe right now (used when closing early)."""
        while True:
            try:
                data = os.read(fd, _READ_SIZE)
            except (BlockingIOError, OSError):
                return
            if not data:
                return
            self._consume(self._streams[fd], data)

    def _consume(self, stream: _Stream, data: bytes) -> None:
        buffer = stream.partial
        buffer += data
        end = buffer.rfind(b"\n")
        if end < 0:
            if len(buffer) >= MAX_LINE:
                self._emit(stream, bytes(buffer), complete=False)
                buffer.clear()
            return
        lines = bytes(buffer[: end + 1])
        del buffer[: end + 1]
        self._emit(stream, lines, complete=True)

    def _finish(self, fd: int, loop: EventLoop) -> None:
        stream = self._streams.pop(fd)
        loop.remove_reader(fd)
        os.close(fd)
        if stream.partial:
            self._emit(stream, bytes(stream.partial), complete=False)
            stream.partial.clear()
        if stream.sink.owned:
            stream.sink.close()

    def _emit(self, stream: _Stream, text: bytes, *, complete: bool) -> None:
        """Write ``text`` (whole lines, or a last partial line) with the configured prefixes."""
        prefix = stream.tag
        if self.options.timestamp_output:
            now = datetime.datetime.now().isoformat(timespec="microseconds")
            prefix = f"[{now}] ".encode() + prefix
        if prefix:
            body = text if complete else text + b"\n"  # a prefixed line must end its own line
            lines = body.split(b"\n")[:-1]  # body ends with a newline: the last item is empty
            text = b"".join(prefix + line + b"\n" for line in lines)
        stream.sink.write(text)

    # -- destinations -------------------------------------------------------------------------

    def _sinks_for(self, rank: int) -> tuple[_Sink, _Sink]:
        if self.options.output_dir is None:
            return self._stdout, self._stderr
        directory = rank_output_dir(self.options.output_dir, rank)
        directory.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
        return tuple(  # type: ignore[return-value]
            _Sink(os.open(directory / name, flags, 0o644), owned=True) for name in STREAMS
        )
