"""Random schedules of sends, out-of-order deliveries, receives, probes and cancels.

A checker watches every match the state reports and asserts MPI's rules at that moment:

- the receive's source and tag admit the message (ANY_TAG only for tags >= 0);
- the message was delivered, and so were all earlier messages from its sender;
- no earlier message from the same sender that this receive also admits is still unmatched
  (non-overtaking, sender side);
- no receive posted earlier and still pending admits the message (posting order);
- nothing is matched twice;

and after every step that no pending receive admits an available unmatched message (no match
is missed).  At the end every message is found exactly once.
"""

from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.mca.pml.ob1.matching import MatchingState
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG

SEND_TAGS = [-2, 0, 1, 2]
RECV_TAGS = [ANY_TAG, -2, 0, 1, 2]


class Checker:
    def __init__(self, sends, fast=False):
        self.sends = sends
        self.fast = fast
        self.delivered = [set() for _ in sends]
        self.matched = {}  # message -> request
        self.pending = {}  # request -> (source, tag), in posting order
        self.params = {}
        self.retained = set()
        self.state = MatchingState(len(sends), on_match=self.on_match, retain=self.retain)

    # -- what the state reports ---------------------------------------------------------------

    def on_match(self, request, message):
        assert request in self.pending, f"{request} matched but not pending"
        self.check_match(request, message)
        del self.pending[request]

    def retain(self, message):
        assert message not in self.retained
        self.retained.add(message)
        return message

    # -- the rules ----------------------------------------------------------------------------

    def admits(self, source, tag, message):
        sender, index = message
        sent_tag = self.sends[sender][index]
        return source in (ANY_SOURCE, sender) and (
            tag == sent_tag or (tag == ANY_TAG and sent_tag >= 0)
        )

    def available(self, message):
        sender, index = message
        return all(j in self.delivered[sender] for j in range(index + 1))

    def check_match(self, request, message):
        source, tag = self.params[request]
        assert message not in self.matched, f"{message} matched twice"
        assert self.admits(source, tag, message)
        assert self.available(message), f"{message} matched before an earlier one arrived"
        sender, index = message
        for earlier in range(index):
            if (sender, earlier) not in self.matched:
                assert not self.admits(source, tag, (sender, earlier)), "overtaken"
        for other, (other_source, other_tag) in self.pending.items():
            if other == request:
                break
            assert not self.admits(other_source, other_tag, message), (
                f"{message} went to {request} while {other}, posted earlier, was waiting"
            )
        self.matched[message] = request

    def unmatched_available(self):
        for sender, tags in enumerate(self.sends):
            for index in range(len(tags)):
                message = (sender, index)
                if message not in self.matched and self.available(message):
                    yield message

    def check_quiescent(self):
        for request, (source, tag) in self.pending.items():
            for message in self.unmatched_available():
                assert not self.admits(source, tag, message), f"{request} missed {message}"

    # -- operations ---------------------------------------------------------------------------

    def arrive(self, sender, index):
        self.delivered[sender].add(index)
        message = (sender, index)
        tag = self.sends[sender][index]
        if self.fast:  # as the PML does: the short way first, the long way if it declines
            request = self.state.take_posted(sender, tag, index & 0xFFFF)
            if request is not None:
                self.on_match(request, message)
                return
        at_once = self.state.arrive(sender, tag, index & 0xFFFF, message)
        assert at_once == (message not in self.retained)

    def post(self, request, source, tag):
        self.params[request] = (source, tag)
        message = self.state.post(request, source, tag)
        if message is None:
            self.pending[request] = (source, tag)
        else:
            self.check_match(request, message)

    def mprobe(self, request, source, tag):
        self.params[request] = (source, tag)
        message = self.state.mprobe(source, tag)
        if message is not None:
            self.check_match(request, message)
        else:
            self.check_probe_found_nothing(source, tag)

    def probe(self, source, tag):
        message = self.state.probe(source, tag)
        if message is None:
            self.check_probe_found_nothing(source, tag)
            return
        assert message not in self.matched and self.available(message)
        assert self.admits(source, tag, message)
        sender, index = message
        for earlier in range(index):
            assert (sender, earlier) in self.matched or not self.admits(
                source, tag, (sender, earlier)
            )
        assert self.state.probe(source, tag) == message  # probing again changes nothing

    def check_probe_found_nothing(self, source, tag):
        for message in self.unmatched_available():
            assert not self.admits(source, tag, message), f"probe missed {message}"

    def cancel(self, request):
        source, _tag = self.params[request]
        expected = request in self.pending
        assert self.state.cancel(request, source) is expected
        self.pending.pop(request, None)


@st.composite
def schedules(draw):
    senders = draw(st.integers(1, 4))
    sends = [draw(st.lists(st.sampled_from(SEND_TAGS), max_size=8)) for _ in range(senders)]
    deliveries = []
    for tags in sends:  # each message may arrive up to 3 places late
        lateness = [i + draw(st.integers(0, 3)) for i in range(len(tags))]
        deliveries.append(sorted(range(len(tags)), key=lambda i: (lateness[i], i)))
    sources = st.sampled_from([ANY_SOURCE, *range(senders)])
    tags = st.sampled_from(RECV_TAGS)
    operation = st.one_of(
        st.tuples(st.just("arrive"), st.integers(0, senders - 1)),
        st.tuples(st.just("post"), sources, tags),
        st.tuples(st.just("post"), sources, tags),
        st.tuples(st.just("probe"), sources, tags),
        st.tuples(st.just("mprobe"), sources, tags),
        st.tuples(st.just("cancel"), st.integers(0, 40)),
    )
    return sends, deliveries, draw(st.lists(operation, max_size=60))


@settings(max_examples=300, deadline=None)
@given(schedules(), st.booleans())
def test_random_schedules_follow_every_matching_rule(schedule, fast):
    """``fast``: arrivals try :meth:`MatchingState.take_posted` first, as the PML does."""
    sends, deliveries, operations = schedule
    checker = Checker(sends, fast)
    next_delivery = [0] * len(sends)
    requests = 0
    posted = []  # the request objects themselves: the state knows requests by identity

    def deliver(sender):
        if next_delivery[sender] < len(deliveries[sender]):
            checker.arrive(sender, deliveries[sender][next_delivery[sender]])
            next_delivery[sender] += 1

    for operation in operations:
        kind = operation[0]
        if kind == "arrive":
            deliver(operation[1])
        elif kind == "post":
            posted.append(f"r{requests}")
            checker.post(posted[-1], operation[1], operation[2])
            requests += 1
        elif kind == "mprobe":
            checker.mprobe(f"mprobe{requests}", operation[1], operation[2])
            requests += 1
        elif kind == "probe":
            checker.probe(operation[1], operation[2])
        elif operation[1] < len(posted):
            checker.cancel(posted[operation[1]])
        checker.check_quiescent()

    for sender in range(len(sends)):
        while next_delivery[sender] < len(deliveries[sender]):
            deliver(sender)
            checker.check_quiescent()
    assert checker.state.held_count == 0

    # Every message not yet received is waiting, and a receive for it finds exactly it.
    for sender, tags in enumerate(sends):
        for index, tag in enumerate(tags):
            if (sender, index) not in checker.matched:
                assert checker.state.mprobe(sender, tag) == (sender, index)
                checker.matched[(sender, index)] = "drain"
    assert len(checker.matched) == sum(len(tags) for tags in sends)
    assert checker.state.unexpected_count == 0
    assert checker.state.posted_count == len(checker.pending)
