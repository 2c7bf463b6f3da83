"""Matching follows MPI's rules: one example per rule, then random schedules against them all."""

import pytest

from ompy.mca.pml.ob1.matching import MatchingState, SequenceError
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG


class Recorder:
    """A matching state for ``size`` peers that records matches and retained messages."""

    def __init__(self, size):
        self.matches = []
        self.retained = []
        self.state = MatchingState(size, on_match=self.on_match, retain=self.retain)

    def on_match(self, request, message):
        self.matches.append((request, message))

    def retain(self, message):
        self.retained.append(message)
        return message


def test_a_message_matches_the_receive_posted_for_it():
    rec = Recorder(2)
    assert rec.state.post("r", 1, 7) is None
    assert rec.state.arrive(1, 7, 0, "m") is True
    assert rec.matches == [("r", "m")]
    assert rec.retained == []  # delivered straight from the fragment
    assert rec.state.posted_count == 0


def test_an_unexpected_message_is_retained_and_found_by_a_later_receive():
    rec = Recorder(2)
    assert rec.state.arrive(0, 3, 0, "m") is False
    assert rec.retained == ["m"] and rec.state.unexpected_count == 1
    assert rec.state.post("r", 0, 3) == "m"
    assert rec.state.unexpected_count == 0 and rec.matches == []


def test_the_earliest_posted_receive_wins_between_specific_and_wildcard():
    rec = Recorder(2)
    rec.state.post("wild", ANY_SOURCE, ANY_TAG)
    rec.state.post("specific", 1, 5)
    rec.state.arrive(1, 5, 0, "first")
    rec.state.arrive(1, 5, 1, "second")
    assert rec.matches == [("wild", "first"), ("specific", "second")]

    rec = Recorder(2)
    rec.state.post("specific", 1, 5)
    rec.state.post("wild", ANY_SOURCE, 5)
    rec.state.arrive(1, 5, 0, "first")
    assert rec.matches == [("specific", "first")]


def test_receives_skip_messages_with_other_tags_but_keep_their_order():
    rec = Recorder(1)
    rec.state.arrive(0, 1, 0, "tag1")
    rec.state.arrive(0, 2, 1, "tag2")
    rec.state.arrive(0, 2, 2, "tag2-again")
    assert rec.state.post("r2", 0, 2) == "tag2"
    assert rec.state.post("r1", 0, ANY_TAG) == "tag1"
    assert rec.state.post("r3", 0, ANY_TAG) == "tag2-again"


def test_any_tag_never_matches_negative_tags():
    rec = Recorder(1)
    rec.state.post("user", ANY_SOURCE, ANY_TAG)
    rec.state.arrive(0, -5, 0, "internal")
    assert rec.matches == []
    assert rec.state.probe(0, ANY_TAG) is None
    assert rec.state.post("coll", 0, -5) == "internal"
    rec.state.arrive(0, 4, 1, "user-message")
    assert rec.matches == [("user", "user-message")]


def test_messages_arriving_early_wait_for_their_turn():
    rec = Recorder(1)
    rec.state.post("r0", 0, ANY_TAG)
    rec.state.post("r1", 0, ANY_TAG)
    assert rec.state.arrive(0, 9, 1, "second") is False
    assert rec.state.held_count == 1 and rec.matches == []
    assert rec.state.probe(0, ANY_TAG) is None  # not its turn: invisible
    assert rec.state.arrive(0, 9, 0, "first") is True
    assert rec.matches == [("r0", "first"), ("r1", "second")]
    assert rec.retained == ["second"] and rec.state.held_count == 0


def test_early_messages_become_unexpected_in_sequence_order():
    rec = Recorder(1)
    for seq in (3, 1, 2):
        rec.state.arrive(0, 0, seq, f"m{seq}")
    rec.state.arrive(0, 0, 0, "m0")
    assert [rec.state.post(i, 0, 0) for i in range(4)] == ["m0", "m1", "m2", "m3"]


def test_sequence_numbers_wrap_around_16_bits():
    rec = Recorder(1)
    state = rec.state
    for seq in range(2**16 - 2):  # bring the expected sequence number to 65534
        state.post(seq, 0, 0)
        state.arrive(0, 0, seq, seq)
    rec.matches.clear()
    for i in range(4):
        state.post(f"r{i}", 0, 0)
    # 65535 and 1 arrive early; 0 comes after 65535 (it is later, not earlier).
    for seq, name in ((1, "d"), (65535, "b"), (0, "c"), (65534, "a")):
        state.arrive(0, 0, seq, name)
    assert rec.matches == [("r0", "a"), ("r1", "b"), ("r2", "c"), ("r3", "d")]


def test_send_sequence_numbers_wrap_per_peer():
    state = MatchingState(2, on_match=lambda r, m: None)
    assert [state.next_send_sequence(1) for _ in range(3)] == [0, 1, 2]
    assert state.next_send_sequence(0) == 0
    for _ in range(2**16 - 3):
        state.next_send_sequence(1)
    assert state.next_send_sequence(1) == 0


def test_duplicate_or_stale_sequence_numbers_are_errors():
    rec = Recorder(1)
    rec.state.arrive(0, 0, 0, "m0")
    with pytest.raises(SequenceError, match="behind"):
        rec.state.arrive(0, 0, 0, "m0 again")
    rec.state.arrive(0, 0, 5, "m5")
    with pytest.raises(SequenceError, match="twice"):
        rec.state.arrive(0, 0, 5, "m5 again")


def test_probe_does_not_consume_and_agrees_with_the_next_receive():
    rec = Recorder(3)
    rec.state.arrive(2, 1, 0, "a")
    rec.state.arrive(1, 1, 0, "b")
    first = rec.state.probe(ANY_SOURCE, 1)
    assert rec.state.probe(ANY_SOURCE, 1) == first
    assert rec.state.unexpected_count == 2
    assert rec.state.post("r", ANY_SOURCE, 1) == first


def test_mprobe_takes_the_message_out_of_matching():
    rec = Recorder(1)
    rec.state.arrive(0, 1, 0, "m")
    assert rec.state.mprobe(0, 1) == "m"
    assert rec.state.probe(0, 1) is None
    assert rec.state.post("r", 0, 1) is None
    assert rec.state.mprobe(0, 1) is None


def test_any_source_serves_peers_round_robin():
    rec = Recorder(3)
    for seq in range(4):
        rec.state.arrive(0, 0, seq, f"p0-{seq}")
        rec.state.arrive(2, 0, seq, f"p2-{seq}")
    order = [rec.state.post(i, ANY_SOURCE, ANY_TAG) for i in range(4)]
    assert order == ["p0-0", "p2-0", "p0-1", "p2-1"]
    rec.state.arrive(1, 0, 0, "p1-0")  # a newcomer is served in its turn, after peer 0
    assert [rec.state.post(i, ANY_SOURCE, ANY_TAG) for i in range(3)] == [
        "p0-2",
        "p1-0",
        "p2-2",
    ]


def test_cancel_withdraws_a_posted_receive_only_once():
    rec = Recorder(2)
    rec.state.post("r", 1, 0)
    rec.state.post("w", ANY_SOURCE, 0)
    assert rec.state.cancel("r", 1) is True
    assert rec.state.cancel("r", 1) is False
    assert rec.state.cancel("w", 0) is False  # posted as ANY_SOURCE, not 0
    assert rec.state.cancel("w", ANY_SOURCE) is True
    rec.state.arrive(1, 0, 0, "m")
    assert rec.matches == [] and rec.state.unexpected_count == 1


def test_a_matched_receive_cannot_be_cancelled():
    rec = Recorder(1)
    rec.state.post("r", 0, 0)
    rec.state.arrive(0, 0, 0, "m")
    assert rec.state.cancel("r", 0) is False


def test_bad_source_ranks_are_refused():
    rec = Recorder(2)
    for call in (
        lambda: rec.state.post("r", 2, 0),
        lambda: rec.state.post("r", -2, 0),
        lambda: rec.state.probe(5, 0),
        lambda: rec.state.cancel("r", -3),
        lambda: rec.state.arrive(-2, 0, 0, "m"),
    ):
        with pytest.raises(ValueError, match=r"not ANY_SOURCE and not in 0\.\.1"):
            call()
    with pytest.raises(ValueError, match="size >= 0"):
        MatchingState(-1, on_match=print)
