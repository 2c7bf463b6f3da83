"""The sm module: per-sender rings in the receiver's segment, a doorbell, and CMA get/put.

Hot paths (``sendi``, ``send``, ``progress``) bind everything they touch at setup; the slow
paths (attaching, sleeping, a peer's death, finalize) are kept out of them.

**Publishing.**  A sender copies the record (header, then payload) into its ring and then
publishes it by storing the new head with one aligned 8-byte store through a ``memoryview``
cast to ``Q`` (CPython packs a ``Q`` item with an 8-byte ``memcpy`` to an address that is a
multiple of 8, which compilers emit as one store; numpy's element store is the same store and
costs twice as much).  Loads of the other side's counters go through the same view.  On
x86-64 (TSO) that is all the ordering needed; elsewhere every ring update runs under a POSIX
record lock (:mod:`fcntl` ``lockf``) on one byte of the segment file, and the kernel's lock
provides the barriers.  The receiver delivers the payload in place (a view into the ring, valid
during the callback) and only then stores the new tail, so a sender never overwrites a record
that is being read.

**Flow control.**  A record that does not fit waits in the endpoint's queue (order kept: once
something is queued, later sends queue behind it) and ``progress`` retries.  Nothing is dropped.

**Sleeping.**  Before the progress engine blocks, :meth:`SmBtlModule.before_sleep` raises the
"sleeping" flag of every ring it receives on and the "waiting" flag of every ring it has queued
sends for, issues the heavy side of an asymmetric fence, and checks once more.  A sender that
publishes into a ring whose receiver sleeps rings the receiver's doorbell; a receiver that frees
space in a ring whose sender waits rings the sender's.  The flags cost the fast path one load.

**Peers' deaths.**  Each peer's pidfd is in the module's epoll set (which the progress engine
sleeps on): when it fires and the peer had not marked its segment closed, the peer died; queued
sends fail, the error callbacks hear of it, and later sends raise :class:`BtlPeerError`.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import select
import struct
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ompy.opal.mca.btl import (
    BtlError,
    BtlFlags,
    BtlModule,
    BtlPeerError,
    BtlSizeError,
    BtlUnsupportedError,
    Descriptor,
    Endpoint,
    ImmediateSend,
    MemHandle,
    ModuleAttributes,
    RdmaCompletion,
)
from ompy.opal.mca.shmem import Segment, SegmentDescriptor, ShmemError
from ompy.opal.membarrier import Fence
from ompy.opal.proc import Proc

from . import layout as L  # noqa: N812 (read as "the layout")
from .doorbell import Doorbell
from .immediate import combinable, immediate_sender
from .peer_ring import SmPeerRing
from .sysdeps import CmaError, copy

if TYPE_CHECKING:  # the component module imports this one
    from .component import SmBtlComponent

_PACK = L.RECORD.pack_into
_UNPACK = L.RECORD.unpack_from
_SKIP = L.SKIP
_C_HEAD, _C_TAIL, _C_WAITING, _C_SLEEPING = L.C_HEAD, L.C_TAIL, L.C_WAITING, L.C_SLEEPING
_LOCK, _UNLOCK = fcntl.LOCK_EX, fcntl.LOCK_UN
_lockf = fcntl.lockf
_addressof = ctypes.addressof
_c_char = ctypes.c_char


def _words(view: memoryview) -> memoryview:
    return view.cast("Q")


def _address(view: memoryview) -> int:
    """The address of a contiguous buffer (read-only ones included).

    A writable buffer's address comes from a ctypes view of it (about 0.5 µs); a read-only
    one, which ctypes refuses, from a numpy view (about 4 µs).
    """
    if not len(view):
        return 0
    if not view.readonly:
        return _addressof(_c_char.from_buffer(view))
    return int(np.frombuffer(view, dtype=np.uint8).ctypes.data)


class Ring:
    """One ring as seen by one side: its data, its control words, its local counter."""

    __slots__ = ("counter", "ctl", "data", "lock_at", "mask", "publish", "size")

    def __init__(self, base: memoryview, layout: L.Layout, index: int) -> None:
        control = layout.control(index)
        block = base[control : control + L.CONTROL_BLOCK]
        self.ctl = _words(block)
        if np.frombuffer(block, dtype=np.uint64).ctypes.data % 8:
            raise BtlError(f"sm: ring control block {index} is not 8-byte aligned")
        #: Where the counters are stored (the publishing store): the same view as ``ctl``.
        self.publish = self.ctl
        start = layout.ring(index)
        self.data = base[start : start + layout.fbox_size]
        self.size = layout.fbox_size
        self.mask = layout.fbox_size - 1
        self.lock_at = control
        self.counter = 0  # sender: head it published; receiver: tail it consumed


class Inbox(Ring):
    """A ring of this process's segment: where the process with local rank ``index`` writes."""

    __slots__ = ("endpoint", "index")

    def __init__(self, base: memoryview, layout: L.Layout, index: int) -> None:
        super().__init__(base, layout, index)
        self.index = index
        self.endpoint: SmEndpoint | None = None


class SmEndpoint(Endpoint):
    """A peer on this node: our ring in its segment, its doorbell, pid and pidfd, the queue."""

    __slots__ = (
        "dead",
        "doorbell",
        "error",
        "fd",
        "header",
        "outbox",
        "pid",
        "pidfd",
        "queue",
        "segment",
    )

    def __init__(self, module: SmBtlModule, proc: Proc) -> None:
        super().__init__(module, proc)
        self.queue: deque = deque()
        self.dead = False  # set with error (died) or when the peer finalized
        self.error: BtlPeerError | None = None
        self.segment: Segment | None = None
        self.outbox: Ring | None = None
        self.header: memoryview | None = None
        self.fd = -1
        self.pid = 0
        self.pidfd = -1
        self.doorbell = ""


class SmBtlModule(BtlModule[SmEndpoint]):
    """Shared-memory fragments between the processes of one node (one module per process)."""

    component: SmBtlComponent

    def __init__(
        self,
        component: SmBtlComponent,
        attributes: ModuleAttributes,
        *,
        me: Proc,
        segment: Segment,
        layout: L.Layout,
        fd: int,
        doorbell: Doorbell,
        lock_free: bool,
        cma: bool,
        engine: Any,
        attach: Callable[[SegmentDescriptor], Segment],
        free_list_max: int,
        finalize_timeout: float,
    ) -> None:
        super().__init__(component, "sm", attributes)
        self.me = me
        self.segment = segment
        self.layout = layout
        self.fd = fd
        self.doorbell = doorbell
        self.lock_free = lock_free
        self.cma = cma
        self.flags = BtlFlags.SEND | BtlFlags.SENDI
        if cma:
            self.flags |= BtlFlags.PUT | BtlFlags.GET
        self.engine = engine
        self._attach = attach
        self.finalize_timeout = finalize_timeout
        self.fence = Fence() if lock_free else None
        self.setup_free_lists(initial=8, maximum=free_list_max)
        self._base = segment.buffer
        self.header = _words(self._base[: layout.header_size])
        self.inboxes = [
            Inbox(self._base, layout, index)
            for index in range(layout.ring_count)
            if index != me.local_rank
        ]
        self.endpoints: dict[int, SmEndpoint] = {}
        self._by_pidfd: dict[int, SmEndpoint] = {}
        self._pending: set[SmEndpoint] = set()
        self._regions: dict[int, int] = {}
        self._busy = False
        self._asleep = False
        self._passes = 0
        self._unlinked = False
        self._finalized = False
        #: The rings handed out by :meth:`peer_ring`, by inbox (closed at finalize).
        self._peer_rings: dict[int, SmPeerRing] = {}
        #: Sends that found their ring full and were queued (for tests and tuning).
        self.queued_sends = 0
        self._write = self._write_unlocked if lock_free else self._write_locked
        self._drain = self._drain_unlocked if lock_free else self._drain_locked
        self._ring_bell = doorbell.ring
        self.epoll = select.epoll()
        self.epoll.register(doorbell.fd, select.EPOLLIN)
        engine.register_fd(self.epoll.fileno())
        engine.register_sleep_hook(self.before_sleep)

    # -- peers ------------------------------------------------------------------------------

    def add_procs(self, procs: Sequence[Proc]) -> list[SmEndpoint | None]:
        """Endpoints for this job's other processes on this node that run sm; None otherwise.

        Attaching marks our word in the peer's header; whoever completes the set of expected
        attachers (the owner counts the peers it reaches) unlinks the segment, so from then on
        a crash leaves nothing in the file system.
        """
        me = self.me
        endpoints: list[SmEndpoint | None] = []
        for proc in procs:
            if proc.jobid != me.jobid or proc.same_process(me) or not proc.same_node(me):
                endpoints.append(None)
                continue
            endpoint = self.endpoints.get(proc.rank)
            if endpoint is None:
                endpoint = self._connect(proc)
            endpoints.append(endpoint)
        self._count_attachers()
        return endpoints

    def _connect(self, proc: Proc) -> SmEndpoint | None:
        info = self.component.peer_info(proc.rank)
        if info is None:
            return None  # the peer does not run sm (excluded there): another BTL reaches it
        me, rank = self.me, proc.rank
        protocol = L.PROTOCOL_LOCK_FREE if self.lock_free else L.PROTOCOL_LOCKED
        if info["protocol"] != protocol:
            raise BtlError(
                f"sm: rank {rank} uses the {_protocol_name(info['protocol'])} ring protocol and "
                f"this process (rank {me.rank}) the {_protocol_name(protocol)} one; give every "
                "process of the job the same btl_sm_lockfree setting"
            )
        if proc.local_rank == me.local_rank:
            raise BtlError(
                f"sm: rank {rank} and this process (rank {me.rank}) both have local rank "
                f"{me.local_rank} on node {me.node_name}; local ranks must be unique per node"
            )
        if me.local_rank >= info["ring_count"]:
            raise BtlError(
                f"sm: the segment of rank {rank} has {info['ring_count']} rings, too few for "
                f"this process's local rank {me.local_rank}; set btl_sm_ring_count to at least "
                "the number of processes on the node"
            )
        endpoint = SmEndpoint(self, proc)
        descriptor = SegmentDescriptor.from_dict(info["segment"])
        try:
            segment = self._attach(descriptor)
            fd = os.open(descriptor.path, os.O_RDWR | os.O_CLOEXEC)
        except (ShmemError, FileNotFoundError) as error:
            raise BtlPeerError(
                f"sm: cannot attach the segment of rank {rank} (pid {info['pid']}): {error}; "
                "the peer exited or removed its segment before every local peer attached"
            ) from error
        base = segment.buffer
        header = _words(base[: L.Layout(info["ring_count"], info["fbox_size"]).header_size])
        if header[L.H_MAGIC] != L.MAGIC or header[L.H_VERSION] != L.VERSION:
            raise BtlError(
                f"sm: the segment {descriptor.name!r} of rank {rank} is not an sm segment"
            )
        peer_layout = L.Layout(header[L.H_RINGS], header[L.H_FBOX])
        endpoint.segment, endpoint.fd, endpoint.header = segment, fd, header
        endpoint.outbox = Ring(base, peer_layout, me.local_rank)
        endpoint.outbox.counter = endpoint.outbox.ctl[_C_HEAD]  # normally 0
        endpoint.pid, endpoint.doorbell = info["pid"], info["doorbell"]
        del base
        self._mark_attached(endpoint, header, segment)
        try:
            endpoint.pidfd = os.pidfd_open(endpoint.pid)
        except ProcessLookupError:
            self._release(endpoint)
            raise BtlPeerError(
                f"sm: rank {rank} (pid {endpoint.pid}) is no longer running"
            ) from None
        self.epoll.register(endpoint.pidfd, select.EPOLLIN)
        self._by_pidfd[endpoint.pidfd] = endpoint
        if self.cma:
            self.component.check_cma(endpoint, info)
        self.endpoints[rank] = endpoint
        for inbox in self.inboxes:
            if inbox.index == proc.local_rank:
                inbox.endpoint = endpoint
        return endpoint

    def peer_ring(self, endpoint: SmEndpoint) -> SmPeerRing | None:
        """The ring ``endpoint``'s process writes into, for a receiver that polls it in place.

        Lock-free protocol only: the locked one reads its counters under a record lock.
        """
        if not self.lock_free:
            return None
        for inbox in self.inboxes:
            if inbox.endpoint is endpoint:
                ring = self._peer_rings.get(inbox.index)
                if ring is None:
                    ring = self._peer_rings[inbox.index] = SmPeerRing(self, inbox)
                return ring
        return None

    def ring_bell(self, endpoint: SmEndpoint) -> None:
        """Wake ``endpoint``'s process (it sleeps, or waits for room in a ring)."""
        self._ring_bell(endpoint.doorbell)

    def disable_cma(self) -> None:
        """Stop offering put/get (a peer's memory cannot be read): the PML sends fragments."""
        self.cma = False
        self.flags &= ~(BtlFlags.PUT | BtlFlags.GET)

    def _mark_attached(self, endpoint: SmEndpoint, header: memoryview, segment: Segment) -> None:
        _lockf(endpoint.fd, _LOCK, 1, 0)
        try:
            header[L.H_ATTACHED + self.me.local_rank] = 1
            if self._complete(header):
                with contextlib.suppress(FileNotFoundError):  # the owner was quicker
                    segment.unlink()
        finally:
            _lockf(endpoint.fd, _UNLOCK, 1, 0)

    @staticmethod
    def _complete(header: memoryview) -> bool:
        expected = header[L.H_EXPECTED]
        if not expected:
            return False  # the owner has not said how many peers it expects yet
        attached = sum(header[L.H_ATTACHED + i] for i in range(header[L.H_RINGS]))
        return attached >= expected

    def _count_attachers(self) -> None:
        if self._unlinked:
            return
        _lockf(self.fd, _LOCK, 1, 0)
        try:
            self.header[L.H_EXPECTED] = max(len(self.endpoints), self.header[L.H_EXPECTED])
            if self.endpoints and self._complete(self.header):
                self.unlink_own()
        finally:
            _lockf(self.fd, _UNLOCK, 1, 0)

    def unlink_own(self) -> None:
        """Remove this process's segment from the file system (mappings stay valid)."""
        if not self._unlinked:
            self._unlinked = True
            with contextlib.suppress(FileNotFoundError):
                self.segment.unlink()

    @property
    def unlinked(self) -> bool:
        return self._unlinked

    def del_procs(self, procs: Sequence[Proc], endpoints: Sequence[SmEndpoint | None]) -> None:
        for endpoint in endpoints:
            if isinstance(endpoint, SmEndpoint) and endpoint.module is self:
                self.endpoints.pop(endpoint.proc.rank, None)
                self._release(endpoint)

    # -- sending ----------------------------------------------------------------------------

    def sendi(
        self, endpoint: SmEndpoint, header: bytes | memoryview, payload: memoryview, tag: int
    ) -> bool:
        if endpoint.queue or endpoint.dead:
            if endpoint.dead:
                raise self._unreachable(endpoint)
            return False
        if payload.format != "B" or payload.ndim != 1:
            payload = payload.cast("B")
        at = len(header)
        length = at + len(payload)
        if length > self.max_send_size:
            return False
        if not self.lock_free:
            return self._write_locked(endpoint, (header, payload), length, tag)
        # _write_unlocked for the commonest record, inlined: it fits before the ring's end.
        ring = endpoint.outbox
        head = ring.counter
        need = (15 + length) & ~7
        pos = head & ring.mask
        ctl = ring.ctl
        if pos + need > ring.size or ring.size - (head - ctl[_C_TAIL]) < need:
            return self._write_unlocked(endpoint, (header, payload), length, tag)
        data = ring.data
        _PACK(data, pos, length, tag)
        pos += 8
        at += pos
        data[pos:at] = header
        data[at : pos + length] = payload
        head += need
        ring.publish[_C_HEAD] = head  # the publishing store, as in _write_unlocked
        ring.counter = head
        if ctl[_C_SLEEPING]:
            self._ring_bell(endpoint.doorbell)
        return True

    def immediate(
        self, endpoint: SmEndpoint, header: struct.Struct, tag: int, limit: int
    ) -> ImmediateSend | None:
        """The PML's header packed with the record header straight into the ring
        (:mod:`.immediate`); None (the PML's ``sendi``) in the locked protocol, or for a header
        whose byte order is not the record header's."""
        if not self.lock_free or not combinable(header):
            return None
        return immediate_sender(self, endpoint, header, tag, limit)

    def send(self, endpoint: SmEndpoint, descriptor: Descriptor, tag: int) -> bool:
        segments = descriptor.segments
        length = len(segments[0]) if len(segments) == 1 else sum(len(s) for s in segments)
        if endpoint.queue or endpoint.dead or not self._write(endpoint, segments, length, tag):
            if endpoint.dead:
                raise self._unreachable(endpoint)
            if length > self.max_send_size:
                raise BtlSizeError(
                    f"sm: a {length}-byte descriptor exceeds max_send_size = {self.max_send_size}"
                )
            endpoint.queue.append((descriptor, length, tag))
            self._pending.add(endpoint)
            self.queued_sends += 1
            return False
        return self.sent_at_once(endpoint, descriptor)

    def _write_unlocked(self, endpoint: SmEndpoint, parts: Sequence, length: int, tag: int) -> bool:
        """Copy one record into the peer's ring and publish it; False when it does not fit."""
        ring = endpoint.outbox
        size = ring.size
        head = ring.counter
        need = (15 + length) & ~7  # record_size(length), inlined
        pos = head & ring.mask
        ctl = ring.ctl
        if pos + need > size:  # does not fit before the end: skip to the start
            room = size - pos
            if size - (head - ctl[_C_TAIL]) < room:
                return False
            _PACK(ring.data, pos, 0, _SKIP)
            head += room
            ring.publish[_C_HEAD] = head
            ring.counter = head
            pos = 0
        if size - (head - ctl[_C_TAIL]) < need:
            return False
        data = ring.data
        _PACK(data, pos, length, tag)
        at = pos + 8
        for part in parts:
            end = at + len(part)
            data[at:end] = part
            at = end
        head += need
        ring.publish[_C_HEAD] = head  # the publishing store: one aligned 8-byte store
        ring.counter = head
        if ctl[_C_SLEEPING]:
            self._ring_bell(endpoint.doorbell)
        return True

    def _write_locked(self, endpoint: SmEndpoint, parts: Sequence, length: int, tag: int) -> bool:
        fd, at = endpoint.fd, endpoint.outbox.lock_at
        _lockf(fd, _LOCK, 1, at)
        try:
            return self._write_unlocked(endpoint, parts, length, tag)
        finally:
            _lockf(fd, _UNLOCK, 1, at)

    def _flush(self) -> int:
        """Retry queued sends in order; how many left."""
        events = 0
        write = self._write
        for endpoint in list(self._pending):
            queue = endpoint.queue
            while queue:
                descriptor, length, tag = queue[0]
                if not write(endpoint, descriptor.segments, length, tag):
                    break
                queue.popleft()
                events += 1
                self.send_finished(endpoint, descriptor)
            if not queue:
                self._pending.discard(endpoint)
        return events

    def _unreachable(self, endpoint: SmEndpoint) -> BtlPeerError:
        if endpoint.error is not None:
            return BtlPeerError(str(endpoint.error))
        return BtlPeerError(
            f"sm: rank {endpoint.proc.rank} has finalized; nothing more can be sent to it"
        )

    # -- receiving --------------------------------------------------------------------------

    def progress(self) -> int:
        """Deliver what the rings hold, retry queued sends, now and then look at the epoll."""
        if self._busy:
            return 0
        passes = self._passes = self._passes + 1
        if not self._asleep and not self._pending and passes & 0x3FF:
            # The idle pass, kept short (it sets how soon an arrival is seen): the heads only.
            for inbox in self.inboxes:
                if inbox.ctl[_C_HEAD] != inbox.counter:
                    break
            else:
                return 0
        self._busy = True
        try:
            events = 0
            if self._asleep:
                events += self._woke()
            drain = self._drain
            for inbox in self.inboxes:
                if inbox.ctl[_C_HEAD] != inbox.counter:
                    events += drain(inbox)
            if self._pending:
                events += self._flush()
            if not passes & 0x3FF:
                events += self._poll_events()
            return events
        finally:
            self._busy = False

    def _deliver(self, inbox: Inbox, head: int, publish_each: bool) -> int:
        data, mask, size = inbox.data, inbox.mask, inbox.size
        publish = inbox.publish
        callbacks = self.callbacks
        tail = inbox.counter
        events = 0
        while tail != head:
            pos = tail & mask
            length, kind = _UNPACK(data, pos)
            if kind == _SKIP:
                tail += size - pos
            else:
                tail += (15 + length) & ~7
                callback = callbacks[kind]
                try:
                    if callback is None:
                        self.no_callback(kind)
                    start = pos + 8
                    callback(self, kind, data[start : start + length])
                finally:
                    inbox.counter = tail
                    if publish_each:
                        publish[_C_TAIL] = tail  # after the callback: the record is free again
                events += 1
            inbox.counter = tail
        return events

    def _drain_unlocked(self, inbox: Inbox) -> int:
        events = self._deliver(inbox, inbox.ctl[_C_HEAD], True)
        inbox.publish[_C_TAIL] = inbox.counter
        if inbox.ctl[_C_WAITING] and inbox.endpoint is not None:
            self._ring_bell(inbox.endpoint.doorbell)
        return events

    def _drain_locked(self, inbox: Inbox) -> int:
        fd, at = self.fd, inbox.lock_at
        _lockf(fd, _LOCK, 1, at)
        head = inbox.ctl[_C_HEAD]
        _lockf(fd, _UNLOCK, 1, at)
        events = self._deliver(inbox, head, False)
        _lockf(fd, _LOCK, 1, at)
        try:
            inbox.publish[_C_TAIL] = inbox.counter
            waiting = inbox.ctl[_C_WAITING]
        finally:
            _lockf(fd, _UNLOCK, 1, at)
        if waiting and inbox.endpoint is not None:
            self._ring_bell(inbox.endpoint.doorbell)
        return events

    # -- sleeping ---------------------------------------------------------------------------

    def before_sleep(self) -> bool:
        """Sleep hook: announce that we block, then check once more; False if work arrived."""
        self.doorbell.drain()
        self._asleep = True
        pending = [(endpoint, endpoint.outbox) for endpoint in self._pending]
        if self.lock_free:
            for inbox in self.inboxes:
                inbox.ctl[_C_SLEEPING] = 1
            tails = []
            for _endpoint, ring in pending:
                tails.append(ring.ctl[_C_TAIL])
                ring.ctl[_C_WAITING] = 1
            self.fence.heavy()
            for inbox in self.inboxes:
                if inbox.ctl[_C_HEAD] != inbox.counter:
                    return False
            for (_endpoint, ring), tail in zip(pending, tails, strict=True):
                if ring.ctl[_C_TAIL] != tail:
                    return False
            return True
        ready = True
        for inbox in self.inboxes:
            _lockf(self.fd, _LOCK, 1, inbox.lock_at)
            inbox.ctl[_C_SLEEPING] = 1
            if inbox.ctl[_C_HEAD] != inbox.counter:
                ready = False
            _lockf(self.fd, _UNLOCK, 1, inbox.lock_at)
        for endpoint, ring in pending:
            _lockf(endpoint.fd, _LOCK, 1, ring.lock_at)
            ring.ctl[_C_WAITING] = 1
            # the last failed write saw this tail; a newer one means there may be room now
            if self._has_room(endpoint):
                ready = False
            _lockf(endpoint.fd, _UNLOCK, 1, ring.lock_at)
        return ready

    @staticmethod
    def _has_room(endpoint: SmEndpoint) -> bool:
        _descriptor, length, _tag = endpoint.queue[0]
        ring = endpoint.outbox
        need = L.record_size(length)
        free = ring.size - (ring.counter - ring.ctl[_C_TAIL])
        pos = ring.counter & ring.mask
        return free >= (ring.size - pos if pos + need > ring.size else need)

    def _woke(self) -> int:
        self._asleep = False
        for inbox in self.inboxes:
            inbox.ctl[_C_SLEEPING] = 0
        for endpoint in self._pending:
            endpoint.outbox.ctl[_C_WAITING] = 0
        return self._poll_events()

    def _poll_events(self) -> int:
        events = 0
        for fd, _mask in self.epoll.poll(0):
            if fd == self.doorbell.fd:
                self.doorbell.drain()
                continue
            endpoint = self._by_pidfd.get(fd)
            if endpoint is not None:
                self._peer_exited(endpoint)
                events += 1
        return events

    def _peer_exited(self, endpoint: SmEndpoint) -> None:
        self._forget_pidfd(endpoint)
        for inbox in self.inboxes:  # what it sent before exiting is still ours to deliver
            if inbox.endpoint is endpoint and inbox.ctl[_C_HEAD] != inbox.counter:
                self._drain(inbox)
        endpoint.dead = True
        if endpoint.header is not None and endpoint.header[L.H_CLOSED]:
            return  # it finalized first: an orderly end
        error = BtlPeerError(
            f"sm: rank {endpoint.proc.rank} (pid {endpoint.pid}) on {endpoint.proc.node_name} "
            "exited without finalizing"
        )
        endpoint.error = error
        queued = list(endpoint.queue)
        endpoint.queue.clear()
        self._pending.discard(endpoint)
        for descriptor, _length, _tag in queued:
            self.send_finished(endpoint, descriptor, error)
        self.report_error(endpoint, error)

    def _forget_pidfd(self, endpoint: SmEndpoint) -> None:
        if endpoint.pidfd >= 0:
            self._by_pidfd.pop(endpoint.pidfd, None)
            with contextlib.suppress(OSError, ValueError):
                self.epoll.unregister(endpoint.pidfd)
            os.close(endpoint.pidfd)
            endpoint.pidfd = -1

    # -- RDMA (cross-memory attach) ---------------------------------------------------------

    def register_mem(self, buffer: memoryview) -> MemHandle:
        """A handle naming ``buffer``'s address in this process, for a peer's get or put."""
        if not self.cma:
            return super().register_mem(buffer)
        view = memoryview(buffer)
        if not view.c_contiguous:
            raise BtlError("sm: only contiguous buffers can be registered for get/put")
        view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        key = _address(view)
        self._regions[key] = self._regions.get(key, 0) + 1
        return MemHandle(key, len(view))

    def deregister_mem(self, handle: MemHandle) -> None:
        if not self.cma:
            return super().deregister_mem(handle)
        count = self._regions.get(handle.key)
        if count is None:
            raise KeyError(f"sm: memory handle {handle.key:#x} is not registered")
        if count > 1:
            self._regions[handle.key] = count - 1
        else:
            del self._regions[handle.key]
        return None

    def get(
        self,
        endpoint: SmEndpoint,
        local: memoryview,
        remote: MemHandle,
        offset: int,
        completion: RdmaCompletion | None = None,
    ) -> None:
        """Copy the peer's region from ``offset`` into ``local`` with one process_vm_readv."""
        self._rdma(endpoint, local, remote, offset, write=False)
        if completion is not None:
            completion(None)

    def put(
        self,
        endpoint: SmEndpoint,
        local: memoryview,
        remote: MemHandle,
        offset: int,
        completion: RdmaCompletion | None = None,
    ) -> None:
        """Copy ``local`` into the peer's region at ``offset`` with one process_vm_writev."""
        self._rdma(endpoint, local, remote, offset, write=True)
        if completion is not None:
            completion(None)

    def _rdma(
        self, endpoint: SmEndpoint, local: memoryview, remote: MemHandle, offset: int, write: bool
    ) -> None:
        operation = "put" if write else "get"
        if not self.cma:
            raise BtlUnsupportedError(
                f"sm does not offer {operation} here: cross-memory attach is not permitted "
                "(btl_sm_use_cma); the PML sends fragments instead"
            )
        if endpoint.error is not None:
            raise self._unreachable(endpoint)
        view = memoryview(local)
        view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        if not write and view.readonly:
            raise BtlError("sm: get needs a writable local buffer")
        length = len(view)
        if offset < 0 or offset + length > remote.length:
            raise BtlSizeError(
                f"sm: {operation} of {length} bytes at offset {offset} falls outside the remote "
                f"region of {remote.length} bytes"
            )
        if not length:
            return
        try:
            copy(endpoint.pid, _address(view), remote.key + offset, length, write=write)
        except CmaError as error:
            if error.errno == errno.ESRCH:
                raise BtlPeerError(
                    f"sm: rank {endpoint.proc.rank} (pid {endpoint.pid}) is gone; {operation} "
                    "failed"
                ) from None
            raise BtlError(
                f"sm: {operation} of {length} bytes from rank {endpoint.proc.rank} failed: "
                f"{error.strerror} (is the remote region still registered?)"
            ) from None

    # -- teardown ---------------------------------------------------------------------------

    def finalize(self) -> None:
        """Flush queued sends (bounded), mark our segment closed, release everything."""
        if self._finalized:
            return
        self._finalized = True
        if self._pending:
            deadline = time.monotonic() + self.finalize_timeout
            self.engine.wait_until(
                lambda: not self._pending or time.monotonic() > deadline,
                timeout=self.finalize_timeout,
            )
        self.header[L.H_CLOSED] = 1
        self.engine.unregister_sleep_hook(self.before_sleep)
        self.engine.unregister_fd(self.epoll.fileno())
        for endpoint in list(self.endpoints.values()):
            self._release(endpoint)
        self.endpoints.clear()
        for ring in self._peer_rings.values():
            ring.close()
        self._peer_rings.clear()
        self.epoll.close()
        self.doorbell.close()
        self.inboxes = []
        self.unlink_own()
        self.header = self._base = None
        os.close(self.fd)
        with contextlib.suppress(ShmemError):  # a view kept by a callback: freed with it
            self.segment.detach()
        # Under btl_base_verbose >= 20: shows whether flow control (a full ring) was exercised.
        self.component.log.debug(
            "%d send(s) found a ring full and waited in a queue", self.queued_sends
        )

    def _release(self, endpoint: SmEndpoint) -> None:
        self._forget_pidfd(endpoint)
        self._pending.discard(endpoint)
        endpoint.dead = True
        endpoint.outbox = None
        if endpoint.header is not None:
            endpoint.header.release()
            endpoint.header = None
        if endpoint.fd >= 0:
            os.close(endpoint.fd)
            endpoint.fd = -1
        if endpoint.segment is not None:
            with contextlib.suppress(ShmemError):
                endpoint.segment.detach()
            endpoint.segment = None


def _protocol_name(protocol: int) -> str:
    return {L.PROTOCOL_LOCK_FREE: "lock-free", L.PROTOCOL_LOCKED: "locked"}.get(
        protocol, f"unknown ({protocol})"
    )
