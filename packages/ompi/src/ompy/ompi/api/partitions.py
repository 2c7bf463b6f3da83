"""Partitioned point-to-point (MPI 4): the protocol under ``Psend_init``/``Precv_init``.

A partitioned send and a partitioned receive are persistent requests that *match once*, and
then move one message per round, in partitions: the sender marks each partition ready
(``Pready``), the receiver may look at each partition as soon as it has arrived (``Parrived``).

How ompy does it, on the PML's ordinary messages with tags no user receive can match
(:mod:`.tags`):

- **Matching.**  Both sides count their ``*_init`` calls per (communicator, peer, tag); the
  k-th ``Psend_init`` to a process matches that process's k-th ``Precv_init`` from the sender
  with the same tag, as MPI matches partitioned operations in the order they were initialized.
  At its first ``Start`` the sender sends a *setup* message (tag, that sequence number, its
  partition count and byte total, and a *channel* number it draws for this request) on
  :data:`TAG_PART_SETUP`; the receiver's first ``Start`` takes it, setting aside setups meant
  for its other requests (per instance, in :class:`PartitionBook`), and answers on the
  channel's *ack* tag.  Wildcards are not allowed (MPI's partitioned receives name their source
  and tag).
- **Sizes.**  The two sides must move the same number of bytes; their partition counts may
  differ (a receive partition has arrived when every send partition overlapping its bytes
  has).  Different byte totals fail both requests (their waits raise ``MPI.Exception`` with
  ``ERR_TRUNCATE`` on the receiver when more was sent than fits, ``ERR_ARG`` otherwise on
  either side), naming both sides' partitions and bytes; the sender learns it from the ack, so
  no data is ever sent for a mismatched pair.
- **Data.**  Each send partition is one message on the channel's *data* tag; the receiver posts
  one receive per send partition, straight into the bytes of its buffer where they go
  (contiguous buffers) or into a staging piece it unpacks on arrival (derived datatypes,
  strided arrays).  The sender sends ready partitions in partition order (a partition waits
  until those before it are ready too), so the receiver's receives, posted in that order, take
  them in that order; partitions travel as soon as the ack has come back, before ``Wait``.
- **Rounds.**  Each ``Start`` begins a round (a ``CoreRequest``): the send round completes
  when every partition was marked ready and sent, the receive round when every partition has
  arrived.  Rounds after the first need no setup.

Channels are drawn from one counter per process (:class:`PartitionBook`), so two live
partitioned sends of one process never share one; the data and ack tags of channel ``n`` are
``PART_DATA_BASE - n`` and ``PART_ACK_BASE - n`` (modulo :data:`PART_CHANNELS`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

import attrs

from ..completion import CoreRequest, chain
from ..constants import ANY_SOURCE, ANY_TAG
from ..datatype.buffer import BufferSpec
from ..errors import ERR_ARG, ERR_REQUEST, ERR_TRUNCATE
from ..errors import Exception as MPIException
from ..mca.pml.interface import PmlRequest
from .checks import as_int
from .communicator import Communicator
from .pickled import byte_spec
from .tags import PART_ACK_BASE, PART_CHANNELS, PART_DATA_BASE, TAG_PART_SETUP
from .transfers import STANDARD

#: The setup message: tag, init sequence number, channel, partitions, bytes.
_SETUP = struct.Struct("!qqqqq")
#: The ack: accepted (1/0), the receiver's partitions and bytes.
_ACK = struct.Struct("!qqq")

Key = tuple[int, int, int, int]  # (context id, peer's world rank, tag, init sequence number)


@attrs.define(eq=False)
class PartitionBook:
    """A process's partitioned-communication state (``Instance.partitioned``)."""

    #: The next channel number a partitioned send draws.
    next_channel: int = 0
    #: (context id, peer world rank, tag) -> how many sends/receives were initialized.
    sends: dict[tuple[int, int, int], int] = attrs.field(factory=dict)
    receives: dict[tuple[int, int, int], int] = attrs.field(factory=dict)
    #: Setups that arrived before their receive was started.
    mailbox: dict[Key, tuple[int, int, int]] = attrs.field(factory=dict)
    #: Started receives waiting for their setup.
    waiting: dict[Key, PartitionedRecv] = attrs.field(factory=dict)
    #: (context id, source world rank) with a setup receive posted.
    listening: set[tuple[int, int]] = attrs.field(factory=set)

    def draw_sequence(
        self, table: dict[tuple[int, int, int], int], key: tuple[int, int, int]
    ) -> int:
        sequence = table.get(key, 0)
        table[key] = sequence + 1
        return sequence


def _error_class(error: BaseException) -> int:
    return error.error_class if isinstance(error, MPIException) else ERR_ARG


def partition_index(partition: object, partitions: int, call: str) -> int:
    """A partition number checked against the request's partition count."""
    index = as_int(partition, f"{call}: partition")
    if not 0 <= index < partitions:
        raise MPIException(
            ERR_ARG,
            f"{call}: partition {index} does not exist; the request has {partitions} "
            f"partition(s), numbered 0..{partitions - 1}",
        )
    return index


class SendRound(CoreRequest):
    """One round of a partitioned send: complete when every partition was sent."""

    __slots__ = ("next", "pending", "ready")

    def __init__(self, partitions: int) -> None:
        super().__init__()
        self.ready = bytearray(partitions)
        #: The first partition not sent yet (they leave in order).
        self.next = 0
        #: Partitions not yet sent, or sent and not yet complete.
        self.pending = partitions

    def sent(self, request: PmlRequest) -> None:
        if self.complete:
            return
        if request.exception is not None:
            self.fail(request.error or _error_class(request.exception), request.exception)
            return
        self.pending -= 1
        if not self.pending:
            self.finish()


class PartitionedSend:
    """A ``Psend_init`` request's state; calling it starts a round (the Prequest's starter)."""

    kind = "send"

    def __init__(
        self, comm: Communicator, spec: BufferSpec, partitions: int, dest: int, tag: int
    ) -> None:
        self.comm = comm
        self.spec = spec
        self.partitions = partitions
        self.dest = dest
        self.tag = tag
        self.nbytes = spec.nbytes
        self.piece = self.nbytes // partitions
        self.proc_null = dest < 0
        book: PartitionBook = comm.instance.partitioned
        peer = -1 if self.proc_null else comm.remote_world_ranks[dest]
        self.sequence = book.draw_sequence(book.sends, (comm.context_id, peer, tag))
        self.channel: int | None = None
        self.matched = False
        self.failure: MPIException | None = None
        self.round: SendRound | None = None

    def __call__(self) -> SendRound:
        engine = self.comm.engine
        if engine.threaded:  # the round's callbacks are attached before others progress
            with engine.lock:
                return self._start()
        return self._start()

    def _start(self) -> SendRound:
        round_ = SendRound(self.partitions)
        self.round = round_
        if self.proc_null:
            round_.pending = 0
            round_.finish()
        elif self.failure is not None:
            round_.fail(self.failure.error_class, self.failure)
        elif self.channel is None:
            self._setup()
        return round_

    def _setup(self) -> None:
        """First start: draw a channel, send the setup, listen for the ack."""
        comm = self.comm
        book: PartitionBook = comm.instance.partitioned
        self.channel = book.next_channel % PART_CHANNELS
        book.next_channel += 1
        pml = comm.pml
        ack = pml.irecv_view(None, self.dest, PART_ACK_BASE - self.channel, comm)
        setup = _SETUP.pack(self.tag, self.sequence, self.channel, self.partitions, self.nbytes)
        pml.isend(byte_spec(memoryview(setup)), self.dest, TAG_PART_SETUP, comm, STANDARD)
        if ack.complete:
            self._acked(ack)
        else:
            chain(ack, self._acked)

    def _acked(self, ack: Any) -> None:
        round_ = self.round
        if ack.exception is not None:
            self.failure = ack.exception
        else:
            accepted, their_partitions, their_bytes = _ACK.unpack(bytes(ack.view))
            if accepted:
                self.matched = True
            else:
                self.failure = MPIException(
                    ERR_ARG,
                    f"partitioned send to rank {self.dest} (tag {self.tag}): it sends "
                    f"{self.nbytes} bytes in {self.partitions} partition(s) but the matching "
                    f"receive takes {their_bytes} bytes in {their_partitions} partition(s); "
                    "both sides must move the same number of bytes",
                )
        if round_ is None or round_.complete:
            return
        if self.failure is not None:
            round_.fail(self.failure.error_class, self.failure)
        else:
            self._flush(round_)

    def mark_ready(self, round_: SendRound, partitions: Iterable[object], call: str) -> None:
        """``Pready``: check every partition first, then mark them and send what may go."""
        indices = [partition_index(p, self.partitions, call) for p in partitions]
        ready = round_.ready
        seen = set()
        for index in indices:
            if ready[index] or index in seen:
                raise MPIException(
                    ERR_ARG,
                    f"{call}: partition {index} is already marked ready in this round "
                    "(each partition is marked once per Start)",
                )
            seen.add(index)
        for index in indices:
            ready[index] = 1
        if self.matched and not round_.complete:
            self._flush(round_)

    def _flush(self, round_: SendRound) -> None:
        """Send the ready partitions that follow the last one sent, in order."""
        ready, partitions = round_.ready, self.partitions
        comm, pml, spec, piece = self.comm, self.comm.pml, self.spec, self.piece
        tag = PART_DATA_BASE - (self.channel or 0)
        while round_.next < partitions and ready[round_.next]:
            start = round_.next * piece
            round_.next += 1
            if spec.convertor is None:
                data = spec.view[start : start + piece]
            else:
                data = memoryview(bytearray(piece))
                spec.convertor.pack(start, data)
            request = pml.isend(byte_spec(data), self.dest, tag, comm, STANDARD)
            if request.complete:
                round_.sent(request)
            else:
                chain(request, round_.sent)


class RecvRound(CoreRequest):
    """One round of a partitioned receive: complete when every send partition arrived."""

    __slots__ = ("arrived", "pending")

    def __init__(self) -> None:
        super().__init__()
        self.arrived = bytearray()
        self.pending = -1  # until the setup is known

    def expect(self, pieces: int) -> None:
        self.arrived = bytearray(pieces)
        self.pending = pieces
        if not pieces:
            self.finish()


class PartitionedRecv:
    """A ``Precv_init`` request's state; calling it starts a round (the Prequest's starter)."""

    kind = "receive"

    def __init__(
        self, comm: Communicator, spec: BufferSpec, partitions: int, source: int, tag: int
    ) -> None:
        self.comm = comm
        self.spec = spec
        self.partitions = partitions
        self.source = source
        self.tag = tag
        self.nbytes = spec.nbytes
        self.proc_null = source < 0
        book: PartitionBook = comm.instance.partitioned
        self.peer = -1 if self.proc_null else comm.remote_world_ranks[source]
        self.sequence = book.draw_sequence(book.receives, (comm.context_id, self.peer, tag))
        self.key: Key = (comm.context_id, self.peer, tag, self.sequence)
        #: The sender's side, once matched: channel, partitions, bytes per partition.
        self.channel: int | None = None
        self.send_partitions = 0
        self.send_piece = 0
        self.failure: MPIException | None = None
        self.round: RecvRound | None = None

    def __call__(self) -> RecvRound:
        engine = self.comm.engine
        if engine.threaded:  # the round's callbacks are attached before others progress
            with engine.lock:
                return self._start()
        return self._start()

    def _start(self) -> RecvRound:
        round_ = RecvRound()
        round_.source, round_.tag, round_.count = self.source, self.tag, self.nbytes
        self.round = round_
        if self.proc_null:
            round_.count = 0
            round_.expect(0)
        elif self.failure is not None:
            round_.fail(self.failure.error_class, self.failure)
        elif self.channel is not None:
            self._post(round_)
        else:
            self._await_setup()
        return round_

    # -- matching ---------------------------------------------------------------------------

    def _await_setup(self) -> None:
        book: PartitionBook = self.comm.instance.partitioned
        setup = book.mailbox.pop(self.key, None)
        if setup is not None:
            self._matched(*setup)
            return
        book.waiting[self.key] = self
        _listen(self.comm, self.source)

    def _matched(self, channel: int, partitions: int, nbytes: int) -> None:
        """The sender's setup arrived: answer it, then post this round's receives."""
        comm = self.comm
        accepted = nbytes == self.nbytes
        ack = _ACK.pack(int(accepted), self.partitions, self.nbytes)
        comm.pml.isend(
            byte_spec(memoryview(ack)), self.source, PART_ACK_BASE - channel, comm, STANDARD
        )
        if not accepted:
            error_class = ERR_TRUNCATE if nbytes > self.nbytes else ERR_ARG
            self.failure = MPIException(
                error_class,
                f"partitioned receive from rank {self.source} (tag {self.tag}): the sender "
                f"sends {nbytes} bytes in {partitions} partition(s) but this receive takes "
                f"{self.nbytes} bytes in {self.partitions} partition(s); both sides must move "
                "the same number of bytes",
            )
            if self.round is not None and not self.round.complete:
                self.round.fail(error_class, self.failure)
            return
        self.channel = channel
        self.send_partitions = partitions
        self.send_piece = nbytes // partitions
        if self.round is not None and not self.round.complete:
            self._post(self.round)

    # -- data -------------------------------------------------------------------------------

    def _post(self, round_: RecvRound) -> None:
        """Post one receive per send partition, in partition order."""
        comm, pml, spec = self.comm, self.comm.pml, self.spec
        piece, tag = self.send_piece, PART_DATA_BASE - (self.channel or 0)
        round_.expect(self.send_partitions)
        for index in range(self.send_partitions):
            start = index * piece
            if spec.convertor is None:
                target = spec.view[start : start + piece]
            else:
                target = memoryview(bytearray(piece))
            request = pml.irecv_view(target, self.source, tag, comm)
            done = _Arrival(self, round_, index, target)
            if request.complete:
                done(request)
            else:
                chain(request, done)

    def arrived(self, round_: RecvRound, partition: int) -> bool:
        """Whether every send partition overlapping receive ``partition``'s bytes arrived."""
        if round_.complete:
            return True
        if round_.pending < 0:
            return False
        piece = self.nbytes // self.partitions
        send_piece = self.send_piece
        if not piece or not send_piece:
            return round_.pending == 0
        first = partition * piece // send_piece
        last = ((partition + 1) * piece - 1) // send_piece
        return all(round_.arrived[first : last + 1])


class _Arrival:
    """Completion of one send partition's receive: unpack if staged, count it."""

    __slots__ = ("index", "receive", "round", "staging")

    def __init__(
        self, receive: PartitionedRecv, round_: RecvRound, index: int, staging: memoryview
    ) -> None:
        self.receive = receive
        self.round = round_
        self.index = index
        self.staging = staging

    def __call__(self, request: Any) -> None:
        round_ = self.round
        if round_.complete:
            return
        if request.exception is not None:
            round_.fail(request.error or _error_class(request.exception), request.exception)
            return
        convertor = self.receive.spec.convertor
        if convertor is not None:
            convertor.unpack(self.index * self.receive.send_piece, self.staging)
        round_.arrived[self.index] = 1
        round_.pending -= 1
        if not round_.pending:
            round_.finish()


def _listen(comm: Communicator, source: int) -> None:
    """Keep a setup receive posted from ``source`` while receives wait for setups from it."""
    book: PartitionBook = comm.instance.partitioned
    where = (comm.context_id, source)
    if where in book.listening:
        return
    book.listening.add(where)
    request = comm.pml.irecv_view(None, source, TAG_PART_SETUP, comm)
    handler = _SetupArrival(comm, source)
    if request.complete:
        handler(request)
    else:
        chain(request, handler)


class _SetupArrival:
    """A setup message arrived: hand it to its receive, or set it aside."""

    __slots__ = ("comm", "source")

    def __init__(self, comm: Communicator, source: int) -> None:
        self.comm = comm
        self.source = source

    def __call__(self, request: Any) -> None:
        """``request``: the setup receive (a sized receive), complete."""
        comm, source = self.comm, self.source
        book: PartitionBook = comm.instance.partitioned
        book.listening.discard((comm.context_id, source))
        if request.exception is not None or request.view is None:
            return  # the communicator is going away; its receives fail with it
        tag, sequence, channel, partitions, nbytes = _SETUP.unpack(bytes(request.view))
        peer = comm.remote_world_ranks[source]
        key = (comm.context_id, peer, tag, sequence)
        receive = book.waiting.pop(key, None)
        if receive is None:
            book.mailbox[key] = (channel, partitions, nbytes)
        else:
            receive._matched(channel, partitions, nbytes)
        if any(k[0] == comm.context_id and k[1] == peer for k in book.waiting):
            _listen(comm, source)


def check_no_wildcards(source: int, tag: int, call: str) -> None:
    """Partitioned receives name their source and tag (no ANY_SOURCE/ANY_TAG)."""
    if source == ANY_SOURCE or tag == ANY_TAG:
        what = "source" if source == ANY_SOURCE else "tag"
        raise MPIException(
            ERR_ARG,
            f"{call}: a partitioned receive needs a specific {what} (ANY_SOURCE and ANY_TAG "
            "cannot match partitioned sends)",
        )


def not_started(call: str) -> MPIException:
    return MPIException(
        ERR_REQUEST, f"{call}: the partitioned request is not active; Start() it first"
    )
