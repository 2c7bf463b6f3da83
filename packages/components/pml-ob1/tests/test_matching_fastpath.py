"""The fast path's two matching questions, ``quiet`` and ``claim``, agree with the general path.

For any reachable matching state, a receive that the fast path takes inline (``quiet`` for
its source, then ``claim`` of the arriving message) is exactly a receive that, posted the
general way, would have been matched at once by that message; and afterwards both states
behave the same.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.mca.pml.ob1.matching import SEQ_MASK, MatchingState
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG

SIZE = 3
tags = st.sampled_from([0, 1, -5])
wants = st.sampled_from([0, 1, ANY_TAG])
sources = st.integers(0, SIZE - 1)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("post"), st.sampled_from([0, 1, 2, ANY_SOURCE]), wants),
        st.tuples(st.just("arrive"), sources, tags),
        st.tuples(st.just("take"), st.sampled_from([0, 1, 2, ANY_SOURCE]), wants),
    ),
    max_size=12,
)


class World:
    """A matching state and the sequence numbers its senders stamp their messages with."""

    def __init__(self) -> None:
        self.matches: list[tuple[object, object]] = []
        self.state = MatchingState(SIZE, on_match=lambda r, m: self.matches.append((r, m)))
        self.sent = [0] * SIZE

    def run(self, ops: list[tuple]) -> None:
        for number, (kind, peer, value) in enumerate(ops):
            if kind == "post":
                self.state.post(f"r{number}", peer, value)
            elif kind == "take":
                self.state.mprobe(peer, value)
            else:
                self.arrive(peer, value, f"m{number}")

    def arrive(self, source: int, tag: int, message: object) -> None:
        seq = self.sent[source]
        self.sent[source] = (seq + 1) & SEQ_MASK
        self.state.arrive(source, tag, seq, message)


@settings(max_examples=300, deadline=None)
@given(prefix=operations, source=sources, tag=tags, want=wants, after=operations)
def test_an_inline_match_is_the_match_a_posted_receive_would_get(prefix, source, tag, want, after):
    fast, general = World(), World()
    fast.run(prefix)
    general.run(prefix)
    seq = fast.sent[source]
    # The general way: post the receive, then the message arrives.
    posted = general.state.post("receive", source, want)
    matched_at_once = False
    if posted is None:
        general.arrive(source, tag, "message")
        matched_at_once = general.matches[-1:] == [("receive", "message")]
    # The fast way: only when quiet, and only a claimed message.
    if fast.state.quiet(source):
        assert posted is None, "quiet, yet the posted receive found an unexpected message"
        claimed = fast.state.claim(source, seq, tag, want)
        assert claimed == matched_at_once
        if not claimed:
            return  # the fast path declines: the message goes the general way
        fast.sent[source] = (seq + 1) & SEQ_MASK
        # Afterwards the two states answer every later operation the same.
        start = len(general.matches)
        fast.run(after)
        general.run(after)
        assert (
            fast.matches[len(fast.matches) - (len(general.matches) - start) :]
            == (general.matches[start:])
        )
        assert fast.state.posted_count == general.state.posted_count
        assert fast.state.unexpected_count == general.state.unexpected_count


def test_claim_refuses_a_message_out_of_turn_or_of_another_tag():
    world = World()
    assert world.state.quiet(1)
    assert not world.state.claim(1, 1, 0, 0), "sequence 1 while 0 is expected"
    assert not world.state.claim(1, 0, 4, 5), "tag 4 for a receive of tag 5"
    assert not world.state.claim(1, 0, -3, ANY_TAG), "ANY_TAG never takes library traffic"
    assert world.state.claim(1, 0, 4, ANY_TAG)
    assert world.state.claim(1, 1, 5, 5)


def test_anything_posted_or_waiting_makes_a_source_not_quiet():
    world = World()
    world.state.post("wild", ANY_SOURCE, 0)
    assert not world.state.quiet(0)
    world = World()
    world.state.post("earlier", 2, 1)
    assert not world.state.quiet(2) and world.state.quiet(1)
    world = World()
    world.arrive(0, 7, "unexpected")
    assert not world.state.quiet(0) and world.state.quiet(1)
    world = World()
    world.state.arrive(1, 9, 1, "early")  # held back: sequence 0 has not arrived
    assert not world.state.quiet(1)
