"""The BTL tag space: one byte in every fragment that says which upper layer receives it.

Like Open MPI, the 256 tags are split into ranges so that independent users of a BTL never
collide: the BTL's own control traffic, the PML (ob1 adds its header type to :data:`TAG_PML`),
one-sided communication, and everything else.  :func:`check_tag` is what ``register`` uses.
"""

from __future__ import annotations

from ..errors import BtlTagError

#: Reserved for the transports' own control traffic.
TAG_BTL = 0x00
#: First tag of the point-to-point messaging layer (ob1 uses ``TAG_PML + header type``).
TAG_PML = 0x40
#: First tag of one-sided communication (osc).
TAG_OSC = 0x60
#: First tag free for other users (tests, tools, future frameworks).
TAG_USR = 0x80
#: The largest tag.
TAG_MAX = 0xFF
#: How many tags exist (the size of a module's callback table).
TAG_COUNT = TAG_MAX + 1


def check_tag(tag: int) -> int:
    """Return ``tag`` if it is a valid BTL tag, else raise :class:`BtlTagError`."""
    if not isinstance(tag, int) or isinstance(tag, bool) or not 0 <= tag <= TAG_MAX:
        raise BtlTagError(f"BTL tags are integers in 0..{TAG_MAX}, got {tag!r}")
    return tag


def tag_range(tag: int) -> str:
    """The name of the range ``tag`` belongs to, for diagnostics."""
    check_tag(tag)
    if tag >= TAG_USR:
        return "user"
    if tag >= TAG_OSC:
        return "osc"
    if tag >= TAG_PML:
        return "pml"
    return "btl"
