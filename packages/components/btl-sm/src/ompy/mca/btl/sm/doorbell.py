"""The doorbell: a datagram socket a sleeping process is woken through.

A process about to block in the progress engine raises "sleeping" flags in its segment; a
sender that publishes a record and sees the flag sends one byte here.  The content is ignored.
The socket is :class:`ompy.opal.doorbell.Doorbell`: a file in the job's private (0700) session
directory, so only processes of this job's user can reach it (see ``docs/security.md``).
"""

from __future__ import annotations

from ompy.opal.doorbell import Doorbell, DoorbellError


def btl_doorbell(rank: int) -> Doorbell:
    """This process's btl-sm doorbell (the rank only makes the file name readable)."""
    return Doorbell(f"btl-sm-{rank}")


__all__ = ["Doorbell", "DoorbellError", "btl_doorbell"]
