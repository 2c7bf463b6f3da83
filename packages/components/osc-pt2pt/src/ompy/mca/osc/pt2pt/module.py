"""The ``pt2pt`` module: one window's RMA as active messages over a private communicator.

How it works (the design of Open MPI's osc/pt2pt, in ompy's terms):

- At creation the window duplicates its communicator, so its messages never meet the
  program's, and posts one *sized receive* (any source, one tag) on the duplicate.  A
  progress callback registered with the instance's engine looks at that receive on every
  progress pass: each message is decoded and *served* at once (a ``Put`` stored, a ``Get``
  answered, an accumulate applied), then the receive is posted again.  So a target serves
  RMA whenever it is inside any MPI call that progresses: a blocking receive, a barrier, a
  wait, a window synchronisation.
- Every operation is answered by its target once applied (an acknowledgement, with data for
  the fetching ones, or an error).  The origin counts the operations it has in flight per
  target; ``Flush`` waits for that count to reach zero, which is remote completion.
  Everything else follows: ``Fence`` is a flush of every target plus a barrier; ``Complete``
  flushes the targets of the access epoch and then tells each one; ``Wait`` waits for a
  ``Complete`` from every origin of the exposure epoch; ``Start`` waits for a ``Post`` from
  each of its targets; ``Lock`` asks the target for its lock and waits for the grant,
  ``Unlock`` flushes and gives it back.
- The PML delivers messages between two processes of one communicator in order, so a target
  sees each origin's operations, and its lock and unlock messages, in program order.

Messages are pickled tuples ``(kind, id, ...)``; an operation's data travels as the packed
stream of its origin buffer, unpacked at the target with the target datatype's typemap.
"""

from __future__ import annotations

import collections
import pickle
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ompy.ompi.completion import CoreRequest
from ompy.ompi.constants import ANY_SOURCE
from ompy.ompi.datatype import BY_KEY
from ompy.ompi.errors import (
    ERR_ARG,
    ERR_OTHER,
    ERR_RMA_RANGE,
    ERR_TYPE,
)
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.osc import (
    FLAVOR_DYNAMIC,
    LOCK_EXCLUSIVE,
    MODEL_UNIFIED,
    OscModule,
    Target,
    WindowSetup,
)
from ompy.ompi.mca.pml.interface import SendMode
from ompy.ompi.op.handle import NO_OP, REPLACE, Op

from . import target as memory_ops
from .locks import LockTable

if TYPE_CHECKING:
    from ompy.ompi.datatype.buffer import BufferSpec
    from ompy.ompi.datatype.datatype import Datatype

#: The tag of every message on the window's private communicator.
TAG = 0

# Assertion bits the module acts on (``MPI.MODE_*``).
_MODE_NOCHECK = 1
_MODE_NOPRECEDE = 2


class _Pending:
    """An operation in flight: its target, its request, what to do with fetched data."""

    __slots__ = ("core", "deliver", "target")

    def __init__(
        self, target: int, core: CoreRequest, deliver: Callable[[bytes], None] | None
    ) -> None:
        self.target = target
        self.core = core
        self.deliver = deliver


class Pt2ptOscModule(OscModule):
    """One window served by active messages (see the module docstring)."""

    def __init__(self) -> None:
        self._memory = memoryview(bytearray(0))
        self._exposed: memory_ops.Exposed | None = None
        self._comm: Any = None  # the private duplicate (an MPI.Intracomm)
        self._c: Any = None  # its Communicator
        self._pml: Any = None
        self._engine: Any = None
        self._instance: Any = None
        self._recv: Any = None
        self._sends: list[Any] = []
        self._serving = False
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        #: Operations in flight per target (acknowledgements still owed).
        self._in_flight: collections.Counter[int] = collections.Counter()
        #: Errors targets reported for operations, raised at the next synchronisation.
        self._failures: list[MPIException] = []
        self._locks = LockTable()
        #: Lock grants received (request ids), and the targets this process locked.
        self._granted: set[int] = set()
        self._holding: dict[int, bool] = {}
        self._posts: collections.Counter[int] = collections.Counter()
        self._completes: collections.Counter[int] = collections.Counter()
        self._access: list[int] = []
        self._exposure: list[int] = []
        self._freed = False

    # -- creation and memory ------------------------------------------------------------------

    def setup(self, setup: WindowSetup) -> None:
        query = setup.query
        if setup.memory is not None:
            self._memory = setup.memory
        elif query.flavor != FLAVOR_DYNAMIC:
            self._memory = memoryview(bytearray(query.size))
        self._exposed = memory_ops.Exposed(
            self._memory, query.disp_unit, dynamic=query.flavor == FLAVOR_DYNAMIC
        )
        self._comm = query.comm.Dup()
        self._c = self._comm._live("Win creation")
        self._instance = self._c.instance
        self._pml = self._c.pml
        self._engine = self._c.engine
        self._recv = self._pml.irecv_view(None, ANY_SOURCE, TAG, self._c)
        self._engine.register(self._progress)
        # Every process must be serving before any origin may send it an operation.
        self._comm.Barrier()

    @property
    def memory(self) -> memoryview:
        return self._memory

    @property
    def model(self) -> int:
        return MODEL_UNIFIED

    def attach(self, memory: memoryview, address: int) -> None:
        assert self._exposed is not None
        self._exposed.regions[address] = memory

    def detach(self, address: int) -> None:
        assert self._exposed is not None
        del self._exposed.regions[address]

    def free(self) -> None:
        self.flush_all()
        # Past this barrier no process will send this window anything.
        self._comm.Barrier()
        self._engine.unregister(self._progress)
        self._recv.cancel()
        self._engine.wait_until(lambda: self._recv.complete and self._sends_done())
        self._comm.Free()
        self._freed = True
        self._raise_failures("Win.Free")

    # -- sending --------------------------------------------------------------------------------

    def _send(self, rank: int, message: tuple[Any, ...]) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        # The engine's (reentrant) MPI lock: with MPI_THREAD_MULTIPLE progress passes hold it,
        # so a send from a program thread never meets the serving callback half-way.
        with self._engine.lock:
            request = self._pml.isend_view(memoryview(data), rank, TAG, self._c, SendMode.STANDARD)
            if not request.complete:
                self._sends.append(request)

    def _sends_done(self) -> bool:
        self._sends = [request for request in self._sends if not request.complete]
        return not self._sends

    def _operation(
        self, rank: int, message: tuple[Any, ...], deliver: Callable[[bytes], None] | None = None
    ) -> CoreRequest:
        """Send an operation to ``rank``; its request completes with the target's answer."""
        core = CoreRequest()
        core.source = rank
        with self._engine.lock:
            ident = self._next_id
            self._next_id += 1
            self._pending[ident] = _Pending(rank, core, deliver)
            self._in_flight[rank] += 1
            self._send(rank, (message[0], ident, *message[1:]))
        return core

    # -- communication --------------------------------------------------------------------------

    def put(self, origin: BufferSpec, target: Target) -> CoreRequest:
        _same_size(origin, target, "Win.Put")
        data = bytes(origin.packed())
        return self._operation(
            target.rank, ("put", target.disp, _typemap(target.datatype), target.count, data)
        )

    def get(self, origin: BufferSpec, target: Target) -> CoreRequest:
        _same_size(origin, target, "Win.Get")
        return self._operation(
            target.rank,
            ("get", target.disp, _typemap(target.datatype), target.count),
            _unpacker(origin),
        )

    def accumulate(self, origin: BufferSpec, target: Target, op: Op) -> CoreRequest:
        return self._accumulate(origin, None, target, op, "Win.Accumulate")

    def get_accumulate(
        self, origin: BufferSpec | None, result: BufferSpec, target: Target, op: Op
    ) -> CoreRequest:
        return self._accumulate(origin, result, target, op, "Win.Get_accumulate")

    def _accumulate(
        self,
        origin: BufferSpec | None,
        result: BufferSpec | None,
        target: Target,
        op: Op,
        call: str,
    ) -> CoreRequest:
        if target.count == 0 or target.datatype.Get_size() == 0:
            if origin is not None:
                _same_size(origin, target, call)
            done = CoreRequest()  # nothing to combine: MPI makes it a no-op
            done.finish()
            return done
        element = _element(target.datatype, call, "target")
        elements = target.count * target.datatype.Get_size() // max(element.Get_size(), 1)
        data = None
        if origin is not None and op != NO_OP:
            _same_size(origin, target, call)
            if _element(origin.datatype, call, "origin") != element:
                raise MPIException(
                    ERR_TYPE,
                    f"{call}: the origin's elements ({origin.datatype.Get_name()}) differ from "
                    f"the target's ({element.Get_name()})",
                )
            data = bytes(origin.packed())
        if result is not None:
            _same_size(result, target, call, what="result")
        self._instance.op.accumulate_kernel(op, element)  # unsupported pairs fail here
        message = (
            "acc",
            target.disp,
            _typemap(target.datatype),
            target.count,
            element.layout.key,
            _op_number(op),
            data,
            elements,
            result is not None,
        )
        deliver = None if result is None else _unpacker(result)
        return self._operation(target.rank, message, deliver)

    def compare_and_swap(
        self, origin: BufferSpec, compare: BufferSpec, result: BufferSpec, target: Target
    ) -> CoreRequest:
        _element(target.datatype, "Win.Compare_and_swap", "target")
        message = (
            "cas",
            target.disp,
            _typemap(target.datatype),
            bytes(compare.packed()),
            bytes(origin.packed()),
        )
        return self._operation(target.rank, message, _unpacker(result))

    # -- serving (the progress callback) ----------------------------------------------------------

    def _progress(self) -> int:
        if self._serving:  # a send below progressed the engine: serve after this message
            return 0
        self._serving = True
        try:
            events = 0
            recv = self._recv
            while recv.complete and not recv.cancelled:
                source, payload = recv.source, recv.view
                # Post the next receive first: messages keep their matching order.
                self._recv = self._pml.irecv_view(None, ANY_SOURCE, TAG, self._c)
                self._serve(source, pickle.loads(payload))
                recv = self._recv
                events += 1
            if self._sends:
                self._sends_done()
            return events
        finally:
            self._serving = False

    def _serve(self, source: int, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "ack":
            self._acknowledged(*message[1:])
        elif kind == "post":
            self._posts[source] += 1
        elif kind == "complete":
            self._completes[source] += 1
        elif kind == "lock":
            for rank, ident in self._locks.request(source, message[1], message[2]):
                self._send(rank, ("ack", ident, 0, "", None))
        elif kind == "unlock":
            for rank, ident in self._locks.release(source):
                self._send(rank, ("ack", ident, 0, "", None))
            self._send(source, ("ack", message[1], 0, "", None))
        elif kind == "granted":
            self._granted.add(message[1])
        else:
            self._apply(source, kind, message[1], message[2:])

    def _apply(self, source: int, kind: str, ident: int, args: tuple[Any, ...]) -> None:
        """Serve one RMA operation and answer it (data, or the error that stopped it)."""
        assert self._exposed is not None
        answer: bytes | None = None
        try:
            if kind == "put":
                disp, typemap, count, data = args
                memory_ops.put(self._exposed.convertor(disp, typemap, count), data)
            elif kind == "get":
                disp, typemap, count = args
                answer = memory_ops.get(self._exposed.convertor(disp, typemap, count))
            elif kind == "acc":
                disp, typemap, count, element, op_number, data, elements, fetch = args
                kernel = self._instance.op.accumulate_kernel(Op.f2py(op_number), BY_KEY[element])
                answer = memory_ops.accumulate(
                    self._exposed.convertor(disp, typemap, count),
                    data,
                    kernel,
                    elements,
                    fetch=fetch,
                )
            elif kind == "cas":
                disp, typemap, compare, data = args
                answer = memory_ops.compare_and_swap(
                    self._exposed.convertor(disp, typemap, 1), compare, data
                )
            else:
                raise ValueError(f"unknown RMA message kind {kind!r}")
        except memory_ops.RangeError as error:
            self._send(source, ("ack", ident, ERR_RMA_RANGE, str(error), None))
        except Exception as error:
            self._send(source, ("ack", ident, ERR_OTHER, f"{type(error).__name__}: {error}", None))
        else:
            self._send(source, ("ack", ident, 0, "", answer))

    def _acknowledged(self, ident: int, error: int, text: str, data: bytes | None) -> None:
        pending = self._pending.pop(ident, None)
        if pending is None:  # a lock grant
            self._granted.add(ident)
            return
        self._in_flight[pending.target] -= 1
        if error:
            failure = MPIException(
                error, f"RMA operation on rank {pending.target} of the window failed: {text}"
            )
            self._failures.append(failure)
            pending.core.fail(error, failure)
            return
        if data is not None and pending.deliver is not None:
            pending.deliver(data)
        pending.core.finish()

    def _raise_failures(self, call: str) -> None:
        if self._failures:
            first, self._failures = self._failures[0], []
            raise MPIException(first.error_class, f"{call}: {first.detail}")

    # -- synchronisation ------------------------------------------------------------------------

    def _wait(self, predicate: Callable[[], bool]) -> None:
        self._engine.wait_until(predicate)

    def fence(self, assertion: int) -> None:
        if not assertion & _MODE_NOPRECEDE:
            self.flush_all()
        self._comm.Barrier()
        self._raise_failures("Win.Fence")

    def start(self, ranks: Sequence[int], assertion: int) -> None:
        if not assertion & _MODE_NOCHECK:
            self._wait(lambda: all(self._posts[rank] > 0 for rank in ranks))
            for rank in ranks:
                self._posts[rank] -= 1
        self._access = list(ranks)

    def complete(self) -> None:
        for rank in self._access:
            self.flush(rank)
        for rank in self._access:
            self._send(rank, ("complete",))
        self._access = []
        self._raise_failures("Win.Complete")

    def post(self, ranks: Sequence[int], assertion: int) -> None:
        self._exposure = list(ranks)
        if not assertion & _MODE_NOCHECK:
            for rank in ranks:
                self._send(rank, ("post",))

    def _exposure_done(self) -> bool:
        return all(self._completes[rank] > 0 for rank in self._exposure)

    def _end_exposure(self) -> None:
        for rank in self._exposure:
            self._completes[rank] -= 1
        self._exposure = []

    def wait(self) -> None:
        self._wait(self._exposure_done)
        self._end_exposure()

    def test(self) -> bool:
        self._engine.progress()
        if not self._exposure_done():
            return False
        self._end_exposure()
        return True

    def lock(self, lock_type: int, rank: int, assertion: int) -> None:
        if assertion & _MODE_NOCHECK:
            self._holding[rank] = False
            return
        ident = self._next_id
        self._next_id += 1
        self._send(rank, ("lock", ident, lock_type))
        self._wait(lambda: ident in self._granted)
        self._granted.discard(ident)
        self._holding[rank] = True

    def unlock(self, rank: int) -> None:
        self.flush(rank)
        if self._holding.pop(rank, False):
            ident = self._next_id
            self._next_id += 1
            self._send(rank, ("unlock", ident))
            self._wait(lambda: ident in self._granted)
            self._granted.discard(ident)
        self._raise_failures("Win.Unlock")

    def lock_all(self, assertion: int) -> None:
        if assertion & _MODE_NOCHECK:
            for rank in range(self._c.size):
                self._holding[rank] = False
            return
        idents = {}
        for rank in range(self._c.size):
            idents[rank] = self._next_id
            self._next_id += 1
            self._send(rank, ("lock", idents[rank], _LOCK_SHARED))
        self._wait(lambda: all(ident in self._granted for ident in idents.values()))
        for rank, ident in idents.items():
            self._granted.discard(ident)
            self._holding[rank] = True

    def unlock_all(self) -> None:
        self.flush_all()
        idents = []
        for rank, held in sorted(self._holding.items()):
            if held:
                idents.append(self._next_id)
                self._send(rank, ("unlock", self._next_id))
                self._next_id += 1
        self._holding.clear()
        self._wait(lambda: all(ident in self._granted for ident in idents))
        self._granted.difference_update(idents)
        self._raise_failures("Win.Unlock_all")

    def flush(self, rank: int) -> None:
        self._wait(lambda: self._in_flight[rank] == 0)

    def flush_all(self) -> None:
        self._wait(lambda: not any(self._in_flight.values()))

    def sync(self) -> None:
        """``Win.Sync``: one progress pass.  Other processes' operations on this window are
        applied only when a pass serves them, so a process polling its own window memory (a
        lock's spin in ``ompy.util.sync``) must give the engine a turn to ever see them."""
        self._engine.progress()


_LOCK_SHARED = 3 - LOCK_EXCLUSIVE  # LOCK_SHARED (2): the other lock type


# -- helpers ---------------------------------------------------------------------------------------


def _typemap(datatype: Datatype) -> Any:
    return datatype.layout.description


def _element(datatype: Datatype, call: str, what: str) -> Datatype:
    """The predefined datatype every element of ``datatype`` is made of (accumulates)."""
    layout = datatype.layout.element_layout()
    if layout is None or not layout.key:
        raise MPIException(
            ERR_TYPE,
            f"{call}: the {what} datatype {datatype.Get_name() or '(derived)'} is not made of "
            "one predefined datatype, which accumulate operations require",
        )
    return BY_KEY[layout.key]


def _op_number(op: Op) -> int:
    number = op.py2f()
    if Op.f2py(number) != op or (not op.Is_commutative() and op not in (REPLACE, NO_OP)):
        raise MPIException(
            ERR_ARG, "RMA accumulate operations take predefined operations only (MPI.SUM, ...)"
        )
    return number


def _same_size(spec: BufferSpec, target: Target, call: str, what: str = "origin") -> None:
    need = target.count * target.datatype.Get_size()
    if spec.nbytes != need:
        raise MPIException(
            ERR_TYPE,
            f"{call}: the {what} holds {spec.nbytes} bytes but the target's "
            f"{target.count} element(s) of {target.datatype.Get_name() or '(derived)'} hold "
            f"{need}",
        )


def _unpacker(spec: BufferSpec) -> Callable[[bytes], None]:
    """What stores fetched data into an origin or result buffer."""
    convertor = spec.convertor

    def deliver(data: bytes) -> None:
        if convertor is None:
            spec.view[: len(data)] = data
        else:
            convertor.unpack_all(data)

    return deliver
