"""What a daemon runs first: read the launch record from standard input, then serve.

``python -m ompy.orte.daemon`` (how launchers start daemons) comes here without the ``ompy``
command group (:mod:`.main`), so a daemon does not import click: every remote host pays a
daemon's imports on the launch's critical path.
"""

from __future__ import annotations

import os
import sys

from ompy.orte.control import wire

from .protocol import DaemonProtocolError, LaunchInfo


def read_launch_info(fd: int = 0) -> LaunchInfo:
    """Read exactly one launch frame from ``fd`` (unbuffered: the rest of stdin stays unread)."""

    def exactly(size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = os.read(fd, size - len(data))
            if not chunk:
                raise DaemonProtocolError("standard input ended before the launch record")
            data += chunk
        return bytes(data)

    length = int.from_bytes(exactly(wire.HEADER_SIZE), "big")
    try:
        wire.check_length(length, wire.MAX_UNAUTHENTICATED_FRAME * 16)
        return LaunchInfo.from_wire(wire.decode_body(exactly(length)))
    except wire.ProtocolError as error:
        raise DaemonProtocolError(str(error)) from None


def main() -> int:
    """Run a daemon from the launch record on stdin; the process exit status."""
    from .node import Daemon

    if sys.stdin is not None and sys.stdin.isatty():
        print(
            "ompy daemon: this command is started by 'ompy run' on each node of a multi-node "
            "job (plm ssh), with its launch record on standard input; it is not run by hand",
            file=sys.stderr,
        )
        return 2
    try:
        info = read_launch_info(0)
    except (OSError, DaemonProtocolError) as error:
        print(f"ompy daemon: cannot read the launch record: {error}", file=sys.stderr)
        return 2
    return Daemon(info, 0).run()
