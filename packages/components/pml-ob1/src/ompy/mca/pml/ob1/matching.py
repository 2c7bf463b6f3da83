"""Matching: which posted receive gets which incoming message, in MPI's order.

One :class:`MatchingState` per communicator (Open MPI's ``mca_pml_ob1_comm_t``) keeps

- the receives posted and not yet matched: one queue per source for specific receives and one
  for ``ANY_SOURCE`` receives; each entry carries its posting order, so a message goes to the
  earliest posted receive that matches it, whichever queue that is in;
- the unexpected messages (arrived, matched by nothing yet), one queue per source in arrival
  order;
- per source, the sequence number expected next and the messages that arrived ahead of it.

The rules that bite:

- Messages from one sender on one communicator match in the order they were sent
  (non-overtaking), however the transports deliver them: a message whose sequence number is
  not the one expected is held until its predecessors have been matched.  Sequence numbers are
  16 bits and wrap, so they are compared modulo 2**16.
- ``ANY_TAG`` matches only tags >= 0; negative tags are the library's own traffic.
- A probe never consumes a message; a matched probe (mprobe) takes it out of matching, for a
  later ``Message.Recv``.
- ``ANY_SOURCE`` must not starve a peer: searching the unexpected messages for a wildcard
  receive scans the peers round-robin, starting after the peer that was served last.

Message and request objects are opaque here: the PML passes its own.  Every match made on
arrival is reported through ``on_match(request, message)``, in matching order, before
:meth:`MatchingState.arrive` returns.  The data of an arriving fragment is valid only inside the
BTL callback, so a message that is kept (unexpected, or early) goes through ``retain`` first,
which copies whatever must outlive the callback; a message matched at once is not retained: the
PML delivers it straight from the fragment.  The structures are plain deques, dicts and tuples:
no per-message object beyond one tuple, no logging.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Final

from ompy.ompi.constants import ANY_SOURCE, ANY_TAG

from .headers import SEQ_BITS

SEQ_MASK: Final = (1 << SEQ_BITS) - 1
#: Sequence numbers more than half the space ahead are taken as behind (a duplicate).
SEQ_HALF: Final = 1 << (SEQ_BITS - 1)


class SequenceError(RuntimeError):
    """A message's sequence number is impossible (a duplicate or a transport bug)."""


def _nothing_to_keep(message: Any) -> Any:
    return message


class MatchingState:
    """The matching state of one communicator with ``size`` peers (ranks ``0..size-1``).

    ``on_match(request, message)`` is called during :meth:`arrive` for every message that
    matches a posted receive, in matching order: the arriving one, then messages from the same
    source that had arrived ahead of their turn.  ``retain(message)`` returns what to keep of a
    message that is not matched at once (by default the message itself).
    """

    __slots__ = (
        "_expected",
        "_held",
        "_next_peer",
        "_on_match",
        "_order",
        "_retain",
        "_send_seq",
        "_specific",
        "_unexpected",
        "_unexpected_count",
        "_wild",
        "size",
    )

    def __init__(
        self,
        size: int,
        *,
        on_match: Callable[[Any, Any], None],
        retain: Callable[[Any], Any] = _nothing_to_keep,
    ) -> None:
        if not isinstance(size, int) or size < 0:
            raise ValueError(f"a communicator has a size >= 0, got {size!r}")
        self.size = size
        self._on_match = on_match
        self._retain = retain
        #: Sequence number of the next message each peer sends us.
        self._expected = [0] * size
        #: Per peer: sequence number -> (tag, message) of messages that arrived early.
        self._held: list[dict[int, tuple[int, Any]] | None] = [None] * size
        #: Per peer: (tag, message) matched by nothing yet, in arrival order.
        self._unexpected: list[deque[tuple[int, Any]]] = [deque() for _ in range(size)]
        self._unexpected_count = 0
        #: Per source: (order, tag, request) of posted specific receives, in posting order.
        self._specific: list[deque[tuple[int, int, Any]]] = [deque() for _ in range(size)]
        #: (order, tag, request) of posted ANY_SOURCE receives, in posting order.
        self._wild: deque[tuple[int, int, Any]] = deque()
        self._order = 0
        #: The peer a wildcard search of unexpected messages starts with.
        self._next_peer = 0
        #: Sequence number of the next message we send each peer.
        self._send_seq = [0] * size

    # -- sending ------------------------------------------------------------------------------

    def next_send_sequence(self, peer: int) -> int:
        """The sequence number for our next message to ``peer`` (wraps modulo 2**16)."""
        seq = self._send_seq[peer]
        self._send_seq[peer] = (seq + 1) & SEQ_MASK
        return seq

    @property
    def send_sequences(self) -> list[int]:
        """The list behind :meth:`next_send_sequence` (mutable: the PML's hot path inlines it)."""
        return self._send_seq

    # -- receiving ----------------------------------------------------------------------------

    def post(self, request: Any, source: int, tag: int) -> Any:
        """Post a receive: the unexpected message it matches (taken), or None (queued)."""
        if source == ANY_SOURCE:
            if self._unexpected_count:
                message = self._search(source, tag, True)
                if message is not None:
                    return message
        elif not 0 <= source < self.size:
            self._check_peer(source)
        elif self._unexpected[source]:
            message = self._search(source, tag, True)
            if message is not None:
                return message
        order = self._order
        self._order = order + 1
        if source == ANY_SOURCE:
            self._wild.append((order, tag, request))
        else:
            self._specific[source].append((order, tag, request))
        return None

    def probe(self, source: int, tag: int) -> Any:
        """The message a receive posted now would match, left in place; or None."""
        return self._search(source, tag, False)

    def mprobe(self, source: int, tag: int) -> Any:
        """Take the message a receive posted now would match out of matching; or None."""
        return self._search(source, tag, True)

    def cancel(self, request: Any, source: int) -> bool:
        """Withdraw a posted, unmatched receive; False if it is not posted (already matched)."""
        if source == ANY_SOURCE:
            queue = self._wild
        else:
            self._check_peer(source)
            queue = self._specific[source]
        for index, entry in enumerate(queue):
            if entry[2] is request:
                del queue[index]
                return True
        return False

    def withdraw(self, source: int, wanted: Callable[[Any], bool]) -> bool:
        """Remove the unexpected message from ``source`` that ``wanted`` picks (a cancelled
        send); False, changing nothing, unless exactly one message is picked.

        Only a message waiting in its turn can go: one held back (arrived early) keeps its
        place in the sequence, so its send is not cancelled.
        """
        self._check_peer(source)
        queue = self._unexpected[source]
        found = [index for index, entry in enumerate(queue) if wanted(entry[1])]
        if len(found) != 1:
            return False
        del queue[found[0]]
        self._unexpected_count -= 1
        return True

    def arrive(self, source: int, tag: int, seq: int, message: Any) -> bool:
        """A message's match header arrived; True if it matched a posted receive at once.

        Matches go to ``on_match``.  A message not matched at once is kept (``retain``): as
        unexpected if it was its turn, held back if it arrived ahead of an earlier message from
        the same source.  Held messages whose turn comes now are matched too, in order.
        """
        if source < 0:
            self._check_peer(source)
        expected = self._expected[source]
        if seq != expected:
            self._hold(source, tag, seq, expected, message)
            return False
        self._expected[source] = (expected + 1) & SEQ_MASK
        request = self._match_posted(source, tag)
        if request is None:
            self._unexpected[source].append((tag, self._retain(message)))
            self._unexpected_count += 1
        else:
            self._on_match(request, message)
        if self._held[source]:
            self._release(source)
        return request is not None

    def take_posted(self, source: int, tag: int, seq: int) -> Any:
        """The common case of :meth:`arrive`, answered cheaply, or None to take the long way.

        When the message is the one expected from ``source``, nothing from it waits ahead of
        its turn, no wildcard receive is posted, and the oldest receive posted for ``source``
        matches ``tag``, that receive is taken and returned, and the message counts as matched
        (the caller delivers it; ``on_match`` is not called).  Otherwise nothing changes and
        the caller passes the message to :meth:`arrive`, which handles every case.
        """
        if source < 0 or self._wild:
            return None
        expected = self._expected[source]
        if seq != expected or self._held[source]:
            return None
        specific = self._specific[source]
        if not specific:
            return None
        want = specific[0][1]
        if want != tag and (want != ANY_TAG or tag < 0):
            return None
        self._expected[source] = (expected + 1) & SEQ_MASK
        return specific.popleft()[2]

    def quiet(self, source: int) -> bool:
        """Whether a receive from ``source`` posted now could only take ``source``'s next
        message: no wildcard or earlier receive is posted for it, and nothing from it waits
        (unexpected, or held back).  The fast path's precondition (see :meth:`claim`)."""
        return not (
            self._wild or self._specific[source] or self._unexpected[source] or self._held[source]
        )

    def claim(self, source: int, seq: int, tag: int, want: int) -> bool:
        """Whether a receive for ``want`` from a :meth:`quiet` ``source`` takes the arriving
        message ``(tag, seq)``: it must be the one expected next and match ``want``.  If so
        it counts as matched (the caller delivers it, nobody is told); else nothing changes
        and the message goes the long way (:meth:`arrive`)."""
        if seq != self._expected[source] or (want != tag and (want != ANY_TAG or tag < 0)):
            return False
        self._expected[source] = (seq + 1) & SEQ_MASK
        return True

    # -- introspection (tests, diagnostics) ---------------------------------------------------

    @property
    def posted_count(self) -> int:
        """Receives posted and not matched yet."""
        return len(self._wild) + sum(len(queue) for queue in self._specific)

    @property
    def unexpected_count(self) -> int:
        """Messages matched by nothing yet (in their turn)."""
        return self._unexpected_count

    @property
    def held_count(self) -> int:
        """Messages that arrived ahead of their turn."""
        return sum(len(held) for held in self._held if held)

    # -- internals ----------------------------------------------------------------------------

    def _match_posted(self, source: int, tag: int) -> Any:
        """Take the earliest posted receive matching a message from ``source`` with ``tag``."""
        specific = self._specific[source]
        wild = self._wild
        best_queue = None
        best_index = 0
        best_order = -1
        if specific:
            for index, (order, want, _request) in enumerate(specific):
                if want == tag or (want == ANY_TAG and tag >= 0):
                    best_queue, best_index, best_order = specific, index, order
                    break
        if wild:
            for index, (order, want, _request) in enumerate(wild):
                if best_queue is not None and order > best_order:
                    break
                if want == tag or (want == ANY_TAG and tag >= 0):
                    best_queue, best_index = wild, index
                    break
        if best_queue is None:
            return None
        request = best_queue[best_index][2]
        del best_queue[best_index]
        return request

    def _search(self, source: int, tag: int, take: bool) -> Any:
        """The unexpected message a receive for (source, tag) matches; removed if ``take``."""
        if source != ANY_SOURCE:
            self._check_peer(source)
            queue = self._unexpected[source]
            if not queue:
                return None
            index = _find(queue, tag)
            if index < 0:
                return None
            message = queue[index][1]
            if take:
                del queue[index]
                self._unexpected_count -= 1
            return message
        if not self._unexpected_count:
            return None
        size = self.size
        peer = self._next_peer
        for _ in range(size):
            queue = self._unexpected[peer]
            if queue:
                index = _find(queue, tag)
                if index >= 0:
                    message = queue[index][1]
                    if take:
                        del queue[index]
                        self._unexpected_count -= 1
                        self._next_peer = peer + 1 if peer + 1 < size else 0
                    return message
            peer = peer + 1 if peer + 1 < size else 0
        return None

    def _hold(self, source: int, tag: int, seq: int, expected: int, message: Any) -> None:
        ahead = (seq - expected) & SEQ_MASK
        if ahead >= SEQ_HALF or not 0 <= seq <= SEQ_MASK:
            raise SequenceError(
                f"message from rank {source} with sequence number {seq} arrived while "
                f"{expected} is expected: it is behind (a duplicate) or not a 16-bit number"
            )
        held = self._held[source]
        if held is None:
            held = self._held[source] = {}
        elif seq in held:
            raise SequenceError(
                f"two messages from rank {source} carry sequence number {seq}; "
                f"the transport delivered a message twice"
            )
        held[seq] = (tag, self._retain(message))

    def _release(self, source: int) -> None:
        """Match held messages from ``source`` whose turn has come, in sequence order."""
        held = self._held[source]
        expected = self._expected[source]
        while held and expected in held:
            tag, message = held.pop(expected)
            expected = (expected + 1) & SEQ_MASK
            self._expected[source] = expected
            request = self._match_posted(source, tag)
            if request is None:
                self._unexpected[source].append((tag, message))
                self._unexpected_count += 1
            else:
                self._on_match(request, message)

    def _check_peer(self, source: int) -> None:
        if not 0 <= source < self.size:
            raise ValueError(
                f"source rank {source} is not ANY_SOURCE and not in 0..{self.size - 1}"
            )


def _find(queue: deque[tuple[int, Any]], tag: int) -> int:
    """Index of the first (tag, message) a receive for ``tag`` matches, or -1."""
    if tag == ANY_TAG:
        for index, entry in enumerate(queue):
            if entry[0] >= 0:
                return index
    else:
        for index, entry in enumerate(queue):
            if entry[0] == tag:
                return index
    return -1
