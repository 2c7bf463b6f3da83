"""One window in shared memory: direct loads and stores to every rank's part of one segment.

Every RMA call is a copy between the origin buffer and the target's slice of the segment, done
by the origin itself (:mod:`.access`); it is complete at the target when the call returns, so
the flushes only order memory and every request is born complete.  Accumulates hold a record
lock of the target bytes (:mod:`.locks`); synchronisation uses the segment's control words
(:mod:`.sync`) and, for passive target, record locks past the end of the file.  The memory
model is unified: there is one copy of the window, the one everybody maps.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ompy.ompi.api.communicator import Communicator
from ompy.ompi.completion import CoreRequest
from ompy.ompi.constants import PROC_NULL
from ompy.ompi.errors import ERR_RANK, ERR_RMA_ATTACH, ERR_RMA_FLAVOR
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.osc import (
    FLAVOR_SHARED,
    LOCK_EXCLUSIVE,
    MODEL_UNIFIED,
    OscModule,
    Target,
    WindowSetup,
)
from ompy.opal.mca.shmem import Segment, SegmentBusyError, SegmentDescriptor

from . import access
from . import layout as L  # noqa: N812 (read as "the layout")
from .handshake import establish
from .locks import RangeLocks
from .sync import Counters, memory_barrier

if TYPE_CHECKING:
    from ompy.ompi.datatype.buffer import BufferSpec
    from ompy.ompi.op.handle import Op

    from .component import SmOscComponent

#: Info hint asking for rank memories that each start on a page (``Allocate_shared``).
NONCONTIG = "alloc_shared_noncontig"


def _done() -> CoreRequest:
    request = CoreRequest()
    request.complete = True
    return request


def communicator_of(comm: Any) -> Communicator:
    """The communicator behind an ``MPI.Intracomm`` handle (or a communicator itself)."""
    if isinstance(comm, Communicator):
        return comm
    referent = comm._referent()
    if not isinstance(referent, Communicator):
        raise TypeError(f"a window needs an intracommunicator, got {comm!r}")
    return referent


class SmOscModule(OscModule):
    """The module of one window whose ranks share a node."""

    def __init__(self, component: SmOscComponent) -> None:
        self.owner = component
        self.comm: Communicator | None = None
        self.segment: Segment | None = None
        self.layout: L.Layout | None = None
        self.flavor = 0
        self.disp_units: tuple[int, ...] = ()
        self.counters: Counters | None = None
        self.locks: RangeLocks | None = None
        self._base: memoryview | None = None
        self._regions: list[memoryview] = []
        #: Segment byte where each rank's memory starts (record-lock offsets of accumulates).
        self._offsets: tuple[int, ...] = ()
        self._access: tuple[int, ...] = ()
        self._locked_all = False

    # -- creation and memory --------------------------------------------------------------------

    def setup(self, setup: WindowSetup) -> None:
        query = setup.query
        comm = communicator_of(query.comm)
        self.comm = comm
        self.flavor = query.flavor
        contiguous = query.flavor == FLAVOR_SHARED and (
            str(query.info.get(NONCONTIG, "false")).lower() not in ("true", "1", "yes")
        )
        gathered = self._gather(comm, query.size, query.disp_unit)
        sizes = tuple(size for size, _ in gathered)
        self.disp_units = tuple(unit for _, unit in gathered)
        layout = L.Layout(sizes, contiguous)
        self.layout = layout
        segment, locks = establish(
            comm,
            lambda: self._create(comm, layout),
            self._attach,
            lambda made: RangeLocks(made.descriptor.path),
            lambda locks: locks.close(),
        )
        self.segment = segment
        self.locks = locks
        base = segment.buffer
        self._base = base
        self._offsets = layout.offsets
        self._regions = [
            base[start : start + size] for start, size in zip(self._offsets, sizes, strict=True)
        ]
        words = segment.array(np.uint64, layout.control_offset, layout.ranks * layout.stride)
        self.counters = Counters(words, layout, comm.rank, comm.engine)
        self.counters.barrier()  # nobody touches a peer before every rank is ready

    @staticmethod
    def _gather(comm: Communicator, size: int, disp_unit: int) -> list[tuple[int, int]]:
        from ompy.ompi.api.internal import allgather

        return [(int(s), int(u)) for s, u in allgather(comm, (size, disp_unit))]

    def _create(self, comm: Communicator, layout: L.Layout) -> Segment:
        instance = comm.instance
        me = instance.procs[instance.world_rank]  # a Proc: the component checked
        job = me.jobid or f"pid{os.getpid()}"
        # The random part keeps other users from creating the name first.
        name = (
            f"ompy-{job}-{secrets.token_hex(8)}-osc-sm-{comm.rank}-{comm.context_id}-"
            f"{self.owner.serial()}"
        )
        segment = self.owner.create_segment(name, layout.size)
        header = segment.array(np.uint64, 0, L.HEADER // 8)
        header[L.H_MAGIC] = L.MAGIC
        header[L.H_VERSION] = L.VERSION
        header[L.H_RANKS] = layout.ranks
        del header
        return segment

    def _attach(self, descriptor: SegmentDescriptor) -> Segment:
        segment = self.owner.attach_segment(descriptor)
        header = segment.array(np.uint64, 0, L.HEADER // 8)
        ok = int(header[L.H_MAGIC]) == L.MAGIC and int(header[L.H_VERSION]) == L.VERSION
        del header
        if not ok:
            segment.detach()
            raise ValueError(f"{descriptor.name!r} is not an osc sm segment of version {L.VERSION}")
        return segment

    def _live(self) -> tuple[Counters, RangeLocks]:
        counters, locks = self.counters, self.locks
        if counters is None or locks is None:
            raise MPIException(ERR_RMA_FLAVOR, "the window was freed")
        return counters, locks

    def _handout(self, rank: int) -> memoryview:
        """A new view of ``rank``'s memory for the program (ours are released at free; a
        view the program keeps stays valid, and keeps the mapping, after the window is freed)."""
        base = self._base
        if base is None or self.layout is None:
            return memoryview(bytearray())
        start = self._offsets[rank]
        return base[start : start + self.layout.sizes[rank]]

    @property
    def memory(self) -> memoryview:
        if self.comm is None:
            return memoryview(bytearray())
        return self._handout(self.comm.rank)

    @property
    def model(self) -> int:
        return MODEL_UNIFIED

    def attach(self, memory: memoryview, address: int) -> None:
        raise MPIException(
            ERR_RMA_ATTACH, "osc sm serves windows with memory it allocated, not dynamic ones"
        )

    def detach(self, address: int) -> None:
        raise MPIException(
            ERR_RMA_ATTACH, "osc sm serves windows with memory it allocated, not dynamic ones"
        )

    def shared_query(self, rank: int) -> tuple[memoryview, int]:
        """``rank``'s memory and displacement unit; ``PROC_NULL``: the first non-empty one.

        Every window of this component is in shared memory, so ``Win.Allocate`` windows
        answer too (MPI 4.1 allows the query on every flavor).
        """
        if rank == PROC_NULL:
            for peer, region in enumerate(self._regions):
                if region.nbytes:
                    return self._handout(peer), self.disp_units[peer]
            return self._handout(0), self.disp_units[0]
        if not 0 <= rank < len(self._regions):
            raise MPIException(
                ERR_RANK,
                f"Win.Shared_query: rank {rank} is not in the window's group of "
                f"{len(self._regions)} process(es)",
            )
        return self._handout(rank), self.disp_units[rank]

    def free(self) -> None:
        counters, locks = self._live()
        counters.barrier()  # every rank's last access to our memory is over
        counters.close()
        self.counters = None
        locks.close()
        self.locks = None
        views = [*self._regions, self._base]
        self._regions = []
        self._base = None
        for view in views:
            if view is not None:
                with contextlib.suppress(BufferError):  # an array over it still lives
                    view.release()
        segment, self.segment = self.segment, None
        if segment is not None:
            try:
                segment.detach()
            except SegmentBusyError:
                # The program still holds a view (tomemory, Shared_query): the mapping goes
                # with the last view; the name was unlinked at creation, so nothing is left.
                self.owner.log.debug("%s stays mapped until its views go", segment.name)

    # -- communication --------------------------------------------------------------------------

    def _target(self, target: Target, call: str) -> tuple[BufferSpec, int]:
        """The target's elements as a spec over its region, and the region's segment byte."""
        rank = target.rank
        counters = self.counters
        if counters is None:
            raise MPIException(ERR_RMA_FLAVOR, f"{call}: the window was freed")
        if rank in counters.unposted:
            counters.await_post(rank)
        region = self._regions[rank]
        spec = access.target_spec(
            region,
            target.disp * self.disp_units[rank],
            target.count,
            target.datatype,
            call=call,
            rank=rank,
        )
        return spec, self._offsets[rank]

    def put(self, origin: BufferSpec, target: Target) -> CoreRequest:
        spec, _ = self._target(target, "Win.Put")
        access.write(spec, access.read(origin))
        return _done()

    def get(self, origin: BufferSpec, target: Target) -> CoreRequest:
        spec, _ = self._target(target, "Win.Get")
        access.write(origin, access.read(spec))
        return _done()

    def _atomically(self, spec: BufferSpec, at: int, action: Callable[[], None]) -> None:
        """Run ``action`` holding the record lock of the bytes ``spec`` touches."""
        low, high = access.span(spec)
        if high <= low:
            action()
            return
        start, length = at + low, high - low
        _, locks = self._live()
        with locks.local:
            if not locks.try_exclusive(start, length):
                assert self.comm is not None
                self.comm.engine.wait_until(lambda: locks.try_exclusive(start, length))
            try:
                action()
            finally:
                locks.release(start, length)

    def _kernel(self, op: Op, element: Any) -> access.Kernel:
        assert self.comm is not None
        kernel: access.Kernel = self.comm.instance.op.accumulate_kernel(op, element)
        return kernel

    def accumulate(self, origin: BufferSpec, target: Target, op: Op) -> CoreRequest:
        call = "Win.Accumulate"
        spec, at = self._target(target, call)
        element, count = access.matching_elements(origin, spec, call)
        if not count:
            return _done()  # nothing to combine: no op is looked up (MPI checks none)
        kernel = self._kernel(op, element)
        source = access.read(origin)
        self._atomically(spec, at, lambda: access.combine(kernel, source, spec, count))
        return _done()

    def get_accumulate(
        self, origin: BufferSpec | None, result: BufferSpec, target: Target, op: Op
    ) -> CoreRequest:
        call = "Win.Get_accumulate"
        spec, at = self._target(target, call)
        element, count = access.matching_elements(result, spec, call)
        if origin is not None:
            access.matching_elements(origin, spec, call)
        if not count:
            return _done()
        kernel = self._kernel(op, element)
        source = None if origin is None else access.read(origin)
        fetched: list[memoryview] = []

        def fetch_and_combine() -> None:
            fetched.append(access.copy_of(spec))
            if source is not None:
                access.combine(kernel, source, spec, count)

        self._atomically(spec, at, fetch_and_combine)
        access.write(result, fetched[0])
        return _done()

    def compare_and_swap(
        self, origin: BufferSpec, compare: BufferSpec, result: BufferSpec, target: Target
    ) -> CoreRequest:
        call = "Win.Compare_and_swap"
        spec, at = self._target(target, call)
        access.matching_elements(origin, spec, call)
        access.matching_elements(compare, spec, call)
        new = access.copy_of(origin)
        expected = access.copy_of(compare)
        fetched: list[memoryview] = []

        def swap() -> None:
            old = access.copy_of(spec)
            fetched.append(old)
            if access.equal_bytes(old, expected):
                access.write(spec, new)

        self._atomically(spec, at, swap)
        access.write(result, fetched[0])
        return _done()

    # -- synchronisation ------------------------------------------------------------------------

    def fence(self, assertion: int) -> None:
        counters, _ = self._live()
        counters.barrier()

    def start(self, ranks: Sequence[int], assertion: int) -> None:
        counters, _ = self._live()
        self._access = tuple(ranks)
        counters.start(ranks)

    def complete(self) -> None:
        counters, _ = self._live()
        counters.complete(self._access)
        self._access = ()

    def post(self, ranks: Sequence[int], assertion: int) -> None:
        counters, _ = self._live()
        counters.post(ranks)

    def wait(self) -> None:
        counters, _ = self._live()
        counters.wait()

    def test(self) -> bool:
        counters, _ = self._live()
        return counters.test()

    def _lock_byte(self, rank: int) -> int:
        assert self.layout is not None
        return self.layout.lock_byte(rank)

    def lock(self, lock_type: int, rank: int, assertion: int) -> None:
        _, locks = self._live()
        byte = self._lock_byte(rank)
        take = locks.try_exclusive if lock_type == LOCK_EXCLUSIVE else locks.try_shared
        if not take(byte, 1):
            assert self.comm is not None
            self.comm.engine.wait_until(lambda: take(byte, 1))
        memory_barrier()

    def unlock(self, rank: int) -> None:
        _, locks = self._live()
        memory_barrier()
        locks.release(self._lock_byte(rank), 1)

    def lock_all(self, assertion: int) -> None:
        _, locks = self._live()
        assert self.layout is not None
        start, count = self._lock_byte(0), self.layout.ranks
        if not locks.try_shared(start, count):
            assert self.comm is not None
            self.comm.engine.wait_until(lambda: locks.try_shared(start, count))
        memory_barrier()

    def unlock_all(self) -> None:
        _, locks = self._live()
        assert self.layout is not None
        memory_barrier()
        locks.release(self._lock_byte(0), self.layout.ranks)

    def flush(self, rank: int) -> None:
        memory_barrier()  # every operation completed when its call returned

    def flush_all(self) -> None:
        memory_barrier()

    def sync(self) -> None:
        memory_barrier()
