"""Tags the library reserves for its own traffic.

User tags are ``0..TAG_UB``; a user receive with ``ANY_TAG`` matches only tags >= 0, so negative
tags can never be taken by a program's receive.  ``-1`` is ``ANY_TAG`` itself and is never sent.

- ``-2 .. -99``: left to the coll framework's components;
- ``-100 .. -199``: the API layer's internal collectives (barrier, allgather for Split and
  context ids);
- ``-(1 << 18)`` downwards, ``1 << 18`` of them: persistent collectives, one tag per request
  (:mod:`ompy.ompi.mca.coll.base.persistent`);
- ``PICKLE_CHANNEL_BASE`` downwards: the out-of-band buffers of pickled messages, one tag per
  message so that the buffers of two messages in flight between the same pair never mix.
- ``PART_DATA_BASE`` and ``PART_ACK_BASE`` downwards (below the pickle channels): the data and
  the acks of partitioned sends, one channel per partitioned send request (:mod:`.partitions`).
"""

from __future__ import annotations

from typing import Final

TAG_BARRIER: Final = -100
TAG_GATHER: Final = -101
TAG_SCATTER: Final = -102
#: Setup messages of partitioned sends (:mod:`.partitions`).
TAG_PART_SETUP: Final = -103
#: The leaders of an intercommunicator's two groups, building a communicator from it.
TAG_INTER: Final = -104

#: The first channel tag of the out-of-band buffers of pickled messages.
PICKLE_CHANNEL_BASE: Final = -(1 << 20)
#: How many distinct channel tags there are (they are reused modulo this number).
PICKLE_CHANNELS: Final = 1 << 30


def pickle_channel(counter: int) -> int:
    """The tag of the ``counter``-th pickled message with out-of-band buffers to one peer."""
    return PICKLE_CHANNEL_BASE - (counter % PICKLE_CHANNELS)


#: The data tags of partitioned sends: channel ``n`` sends its partitions on ``BASE - n``.
PART_DATA_BASE: Final = PICKLE_CHANNEL_BASE - PICKLE_CHANNELS
#: How many partitioned channels there are (channel numbers are taken modulo this number).
PART_CHANNELS: Final = 1 << 28
#: The ack tags of partitioned sends (receiver to sender, once per request).
PART_ACK_BASE: Final = PART_DATA_BASE - PART_CHANNELS
