"""Tags the library reserves for its own traffic.

User tags are ``0..TAG_UB``; a user receive with ``ANY_TAG`` matches only tags >= 0, so negative
tags can never be taken by a program's receive.  ``-1`` is ``ANY_TAG`` itself and is never sent.

- ``-2 .. -99``: left to the coll framework's components;
- ``-100 .. -199``: the API layer's internal collectives (barrier, allgather for Split and
  context ids);
- ``PICKLE_CHANNEL_BASE`` downwards: the out-of-band buffers of pickled messages, one tag per
  message so that the buffers of two messages in flight between the same pair never mix.
"""

from __future__ import annotations

from typing import Final

TAG_BARRIER: Final = -100
TAG_GATHER: Final = -101
TAG_SCATTER: Final = -102
#: The leaders of an intercommunicator's two groups, building a communicator from it.
TAG_INTER: Final = -103

#: The first channel tag of the out-of-band buffers of pickled messages.
PICKLE_CHANNEL_BASE: Final = -(1 << 20)
#: How many distinct channel tags there are (they are reused modulo this number).
PICKLE_CHANNELS: Final = 1 << 30


def pickle_channel(counter: int) -> int:
    """The tag of the ``counter``-th pickled message with out-of-band buffers to one peer."""
    return PICKLE_CHANNEL_BASE - (counter % PICKLE_CHANNELS)
