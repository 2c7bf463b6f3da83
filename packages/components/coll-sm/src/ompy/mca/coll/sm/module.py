"""The sm coll module: barrier, bcast, reduce and allreduce of one communicator in shared memory.

Every operation is a sequence of *steps*, numbered alike on every rank (the members call the
collectives of a communicator in the same order and agree on the message sizes): a barrier is
one step, a message is one step per fragment.  In step ``t`` a rank uses slot set ``t % depth``;
before writing its slot it waits until every rank is DONE with step ``t - depth``, the last
step that used the same set, so ``depth`` fragments are in flight at once (a pipeline).

- **barrier**: DONE = t, wait until every DONE >= t.
- **bcast**: the root copies a fragment into its slot and stores DONE; the others wait for the
  root's DONE, copy out, and store theirs.
- **reduce / allreduce, small messages** (below ``coll_sm_split_min`` bytes): every rank copies
  its fragment into its slot and stores READY; the ranks that need the result (the root, or
  everyone) wait for every READY and combine the slots *in rank order* into their receive
  buffer: ``x0 op (x1 op (... op x[n-1]))``, which is right for non-commutative operations and
  gives every rank bit-identical results.
- **one fragment** (the small messages of a program's hot loop): the same steps, written out
  without the fragment loop, on views of the slots cut to the message's size once and kept
  (:meth:`SmCollModule._cut`).
- **reduce / allreduce, large messages**: each fragment is cut into one slice per rank; a rank
  copies all of its fragment but its own slice into its slot (READY), then combines slice
  ``rank`` of every rank's input, in rank order, into the free slice of its own slot (its own
  input comes straight from its buffer; REDUCED); the root, or everyone, then copies the result
  slices out of the slots.  The combining work is shared by all ranks.

Nothing here draws a coll tag: no point-to-point message is sent after :meth:`enable`.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

import numpy as np

from ompy.ompi.errors import ERR_BUFFER
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.coll import CollModule
from ompy.opal.mca.shmem import Segment, SegmentBusyError, SegmentDescriptor

from . import layout as L  # noqa: N812 (read as "the layout")
from .doorbell import Doorbell, coll_doorbell
from .flags import Flags
from .handshake import establish

_READY, _REDUCED, _DONE = L.READY, L.REDUCED, L.DONE
#: Message sizes whose cut slot views a module keeps (:meth:`SmCollModule._cut`).
_CUT_SIZES = 16


class SmCollModule(CollModule):
    """The shared-memory collectives of one communicator whose ranks all share a node."""

    def __init__(
        self,
        component: Any,
        *,
        fragment: int,
        depth: int,
        split_min: int,
        lock_free: bool,
        poll: int = 0,
    ) -> None:
        self.component = component
        self.poll = poll
        self.fragment = fragment
        self.depth = depth
        self.split_min = split_min
        self.lock_free = lock_free
        self.segment: Segment | None = None
        self.step = 0
        self.flags: Flags | None = None
        self._base: memoryview | None = None
        self._slots: list[list[memoryview]] = []
        #: Message size -> every slot set's slots cut to that size (:meth:`_cut`).
        self._cuts: dict[int, list[list[memoryview]]] = {}
        #: The largest reduction taken in one step by :meth:`_reduce_one`.
        self._one_max = -1
        self._lock_fd: int | None = None

    # -- set-up -----------------------------------------------------------------------------

    def enable(self, comm: Any) -> None:
        """Collective: rank 0 creates the segment, everyone attaches, rank 0 unlinks it."""
        me = comm.instance.procs[comm.instance.world_rank]
        doorbell = coll_doorbell(me.rank)
        try:
            segment, plan, bells = establish(
                comm, lambda: self._create(comm), self._attach, doorbell.address
            )
        except BaseException:
            doorbell.close()
            self._close_lock()
            raise
        try:
            self.fragment, self.depth = plan["fragment"], plan["depth"]
            self.split_min, self.lock_free = plan["split_min"], plan["lock_free"]
            self._one_max = min(self.fragment, self.split_min - 1)
            layout = L.Layout(comm.size, self.fragment, self.depth)
            self._map(comm, segment, layout, doorbell, bells)
        except BaseException:
            if self.flags is None:
                doorbell.close()
            self._release()
            with contextlib.suppress(SegmentBusyError):
                segment.detach()
            raise
        self.segment = segment

    def _create(self, comm: Any) -> tuple[Segment, dict[str, Any]]:
        layout = L.Layout(comm.size, self.fragment, self.depth)
        segment = self.component.create_segment(comm, layout.size)
        header = segment.array(np.uint64, 0, L.HEADER // 8)
        header[L.H_VERSION] = L.VERSION
        header[L.H_RANKS] = layout.ranks
        header[L.H_FRAGMENT] = layout.fragment
        header[L.H_DEPTH] = layout.depth
        header[L.H_MAGIC] = L.MAGIC
        del header
        if not self.lock_free:
            self._open_lock(segment)
        plan = {
            "fragment": self.fragment,
            "depth": self.depth,
            "split_min": self.split_min,
            "lock_free": self.lock_free,
        }
        return segment, plan

    def _attach(self, descriptor: SegmentDescriptor, plan: dict[str, Any]) -> Segment:
        segment = self.component.attach_segment(descriptor)
        header = segment.array(np.uint64, 0, L.HEADER // 8)
        ok = int(header[L.H_MAGIC]) == L.MAGIC and int(header[L.H_VERSION]) == L.VERSION
        del header
        if not ok:
            segment.detach()
            raise ValueError(
                f"segment {descriptor.name!r} is not an sm coll segment of version {L.VERSION}"
            )
        if not plan["lock_free"]:
            self._open_lock(segment)
        return segment

    def _open_lock(self, segment: Segment) -> None:
        """The fd the locked protocol locks; opened while the segment's name still exists."""
        self._lock_fd = os.open(segment.descriptor.path, os.O_RDWR | os.O_CLOEXEC)

    def _close_lock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def _map(
        self, comm: Any, segment: Segment, layout: L.Layout, doorbell: Doorbell, bells: list[str]
    ) -> None:
        lock_fd, self._lock_fd = self._lock_fd, None  # the Flags own it from here on
        base = segment.buffer
        self._base = base
        start = layout.control_offset
        control = base[start : start + layout.control_size]
        mine = segment.array(np.uint64, layout.control(comm.rank), L.BLOCK_WORDS)
        self.flags = Flags(
            control,
            mine,
            stride=L.BLOCK_WORDS,
            rank=comm.rank,
            sleeping=L.SLEEPING,
            engine=comm.engine,
            doorbell=doorbell,
            bells=bells,
            fence=self.component.fence,
            lock_fd=lock_fd,
            poll=self.poll,
        )
        control.release()
        self._slots = [
            [
                base[layout.slot(buffer, rank) : layout.slot(buffer, rank) + layout.fragment]
                for rank in range(comm.size)
            ]
            for buffer in range(layout.depth)
        ]

    def disable(self, comm: Any) -> None:
        """Drop every view of the segment and unmap it (its name is gone since enable)."""
        segment = self.segment
        self.segment = None
        self._release()
        if segment is not None:
            try:
                segment.detach()
            except SegmentBusyError:
                # A user operation kept a view of a slot: the mapping goes when that view does.
                self.component.log.debug("segment %s stays mapped until its views go", segment.name)

    def _cut(self, nbytes: int) -> list[list[memoryview]]:
        """Every slot set's slots cut to ``nbytes`` (at most a fragment), kept for the next
        call of that size (up to :data:`_CUT_SIZES` sizes): a program's small collectives
        repeat a few sizes, and cutting a view costs as much as copying eight bytes."""
        cut = self._cuts.get(nbytes)
        if cut is None:
            cut = [[slot[:nbytes] for slot in row] for row in self._slots]
            if len(self._cuts) < _CUT_SIZES:
                self._cuts[nbytes] = cut
        return cut

    def _release(self) -> None:
        for cut in self._cuts.values():
            for row in cut:
                for view in row:
                    view.release()
        self._cuts = {}
        for row in self._slots:
            for view in row:
                view.release()
        self._slots = []
        if self.flags is not None:
            self.flags.close()
            self.flags = None
        if self._base is not None:
            self._base.release()
            self._base = None
        self._close_lock()

    # -- barrier and bcast ------------------------------------------------------------------

    def barrier(self, comm: Any) -> None:
        """Every rank stores DONE = t and waits until all have."""
        step = self.step + 1
        self.step = step
        flags = self.flags
        flags.store(_DONE, step)
        flags.wait_all(_DONE, step)

    def bcast(self, comm: Any, spec: Any, root: int) -> None:
        """The root's fragments pass through its slots, ``depth`` of them in flight."""
        view = spec.view
        nbytes = view.nbytes
        if not nbytes:
            return
        flags, depth, fragment = self.flags, self.depth, self.fragment
        if nbytes <= fragment:  # one step
            step = self.step + 1
            self.step = step
            slot = self._cut(nbytes)[step % depth][root]
            if comm.rank == root:
                flags.wait_all(_DONE, step - depth)
                slot[:] = view
            else:
                flags.wait_one(root, _DONE, step)
                view[:] = slot
            flags.store(_DONE, step)
            return
        slots = self._slots
        store, wait_all, wait_one = flags.store, flags.wait_all, flags.wait_one
        step = self.step
        if comm.rank == root:
            for start in range(0, nbytes, fragment):
                step += 1
                end = min(start + fragment, nbytes)
                wait_all(_DONE, step - depth)
                slots[step % depth][root][: end - start] = view[start:end]
                store(_DONE, step)
        else:
            for start in range(0, nbytes, fragment):
                step += 1
                end = min(start + fragment, nbytes)
                wait_one(root, _DONE, step)
                view[start:end] = slots[step % depth][root][: end - start]
                store(_DONE, step)
        self.step = step

    # -- reductions -------------------------------------------------------------------------

    def reduce(self, comm: Any, sendspec: Any, recvspec: Any, op: Any, root: int) -> None:
        """``reduce``: the root receives ``x0 op x1 op ... op x[n-1]``."""
        if comm.rank == root:
            source = recvspec.view if sendspec.in_place else sendspec.view
            count = recvspec.count
            if count and source.nbytes <= self._one_max:
                run = comm.instance.op.kernel(op, recvspec.datatype)
                self._reduce_one(comm.rank, source, recvspec.view, count, run)
                return
            self._reduce(
                comm,
                source=source,
                target=recvspec.view,
                count=recvspec.count,
                datatype=recvspec.datatype,
                op=op,
            )
        else:
            count = sendspec.count
            if count and sendspec.view.nbytes <= self._one_max:
                run = comm.instance.op.kernel(op, sendspec.datatype)
                self._reduce_one(comm.rank, sendspec.view, None, count, run)
                return
            self._reduce(
                comm,
                source=sendspec.view,
                target=None,
                count=sendspec.count,
                datatype=sendspec.datatype,
                op=op,
            )

    def allreduce(self, comm: Any, sendspec: Any, recvspec: Any, op: Any) -> None:
        """``allreduce``: every rank receives ``x0 op x1 op ... op x[n-1]``."""
        target = recvspec.view
        source = target if sendspec.in_place else sendspec.view
        count = recvspec.count
        if count and source.nbytes <= self._one_max:
            run = comm.instance.op.kernel(op, recvspec.datatype)
            self._reduce_one(comm.rank, source, target, count, run)
            return
        self._reduce(
            comm,
            source=source,
            target=recvspec.view,
            count=recvspec.count,
            datatype=recvspec.datatype,
            op=op,
        )

    def _reduce(
        self,
        comm: Any,
        *,
        source: memoryview,
        target: memoryview | None,
        count: int,
        datatype: Any,
        op: Any,
    ) -> None:
        if not count:
            return
        nbytes = source.nbytes
        itemsize = nbytes // count
        per_fragment = self.fragment // itemsize
        if not per_fragment:
            raise MPIException(
                ERR_BUFFER,
                f"coll sm: an element of {datatype} takes {itemsize} bytes, more than a "
                f"fragment (coll_sm_fragment_size = {self.fragment}); raise the fragment size "
                "or exclude the component (--mca coll ^sm)",
            )
        run = comm.instance.op.kernel(op, datatype)
        reduce = self._reduce_small if nbytes < self.split_min else self._reduce_split
        reduce(
            comm,
            source=source,
            target=target,
            count=count,
            itemsize=itemsize,
            per_fragment=per_fragment,
            run=run,
        )

    def _reduce_one(
        self, rank: int, source: memoryview, target: memoryview | None, count: int, run: Any
    ) -> None:
        """A reduction of one fragment below ``split_min``: :meth:`_reduce_small`'s step alone."""
        step = self.step + 1
        self.step = step
        flags, depth = self.flags, self.depth
        row = self._cut(source.nbytes)[step % depth]
        flags.wait_all(_DONE, step - depth)
        row[rank][:] = source
        if target is None:
            flags.store(_READY, step)
            flags.store(_DONE, step)  # nothing to read: the slot is the root's now
            return
        flags.store(_READY, step)
        flags.wait_all(_READY, step)
        last = len(row) - 1
        target[:] = row[last]
        for peer in range(last - 1, -1, -1):
            run(row[peer], target, count)
        flags.store(_DONE, step)

    def _reduce_small(
        self,
        comm: Any,
        *,
        source: memoryview,
        target: memoryview | None,
        count: int,
        itemsize: int,
        per_fragment: int,
        run: Any,
    ) -> None:
        flags, slots, depth = self.flags, self._slots, self.depth
        store, wait_all = flags.store, flags.wait_all
        rank, last = comm.rank, comm.size - 1
        order = range(last - 1, -1, -1)
        step = self.step
        for first in range(0, count, per_fragment):
            step += 1
            items = min(per_fragment, count - first)
            start, end = first * itemsize, (first + items) * itemsize
            length = end - start
            row = slots[step % depth]
            wait_all(_DONE, step - depth)
            row[rank][:length] = source[start:end]
            store(_READY, step)
            if target is None:
                store(_DONE, step)  # nothing to read: the slot is the root's now
                continue
            wait_all(_READY, step)
            out = target[start:end]
            out[:] = row[last][:length]
            for peer in order:
                run(row[peer][:length], out, items)
            store(_DONE, step)
        self.step = step

    def _reduce_split(
        self,
        comm: Any,
        *,
        source: memoryview,
        target: memoryview | None,
        count: int,
        itemsize: int,
        per_fragment: int,
        run: Any,
    ) -> None:
        flags, slots, depth = self.flags, self._slots, self.depth
        store, wait_all = flags.store, flags.wait_all
        rank, size = comm.rank, comm.size
        last = size - 1
        order = range(last - 1, -1, -1)
        full = [b * itemsize for b in L.slices(per_fragment, size, itemsize)]
        step = self.step
        for first in range(0, count, per_fragment):
            step += 1
            items = min(per_fragment, count - first)
            bounds = (
                full
                if items == per_fragment
                else [b * itemsize for b in L.slices(items, size, itemsize)]
            )
            base = first * itemsize
            mine = source[base : base + items * itemsize]
            row = slots[step % depth]
            slot = row[rank]
            lo, hi = bounds[rank], bounds[rank + 1]
            wait_all(_DONE, step - depth)
            if lo:
                slot[:lo] = mine[:lo]
            if hi < len(mine):
                slot[hi : len(mine)] = mine[hi:]
            store(_READY, step)
            wait_all(_READY, step)
            if hi > lo:
                out = slot[lo:hi]
                out[:] = mine[lo:hi] if rank == last else row[last][lo:hi]
                n = (hi - lo) // itemsize
                for peer in order:
                    run(mine[lo:hi] if peer == rank else row[peer][lo:hi], out, n)
            store(_REDUCED, step)
            if target is not None:
                wait_all(_REDUCED, step)
                out = target[base : base + items * itemsize]
                for peer in range(size):
                    a, b = bounds[peer], bounds[peer + 1]
                    if b > a:
                        out[a:b] = row[peer][a:b]
            store(_DONE, step)
        self.step = step
