"""What each task of the daemons' srun step runs: read the step's record, become the daemon.

``python -m ompy.mca.plm.slurm.node_daemon``, started by :mod:`.launcher` through ``srun``;
it is ``ompy daemon`` (:class:`ompy.orte.daemon.node.Daemon`) with the node chosen from the
task's environment (:mod:`.record`).  Its standard input stays open after the record: its end
means the launcher (or srun) is gone, and the daemon then kills its ranks and exits.
"""

from __future__ import annotations

import os
import sys

from ompy.orte.control import wire
from ompy.orte.daemon.protocol import DaemonProtocolError

from .record import node_record


def read_frame(fd: int = 0) -> object:
    """Exactly one frame from ``fd``, unbuffered (the rest of stdin stays unread)."""

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
        wire.check_length(length, wire.MAX_UNAUTHENTICATED_FRAME * 64)
        return wire.decode_body(exactly(length))
    except wire.ProtocolError as error:
        raise DaemonProtocolError(str(error)) from None


def main() -> int:
    from ompy.orte.daemon.node import Daemon

    try:
        info = node_record(read_frame(0), os.environ)
    except (OSError, DaemonProtocolError) as error:
        print(f"ompy daemon (slurm): cannot read the launch record: {error}", file=sys.stderr)
        return 2
    return Daemon(info, 0).run()


if __name__ == "__main__":
    sys.exit(main())
