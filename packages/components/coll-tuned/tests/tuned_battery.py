"""Every algorithm of coll/tuned, forced one by one, checked against numpy references.

``run_battery(comm)`` runs on every member of ``comm`` (an ``Intracomm``) and returns the names
of the checks it passed; it raises ``AssertionError`` naming the operation, algorithm, size
and case on the first wrong result.  Parameters cannot change once MPI is initialized, so the
battery drives a :class:`~ompy.mca.coll.tuned.TunedCollModule` of its own on the communicator's
internal object and names the algorithm of each call (``algorithm=``); tags come from the
communicator's own table, as in any collective call.  The module's segment size is tiny so
the segmented algorithms cut even short test vectors into several pieces.

Each rank's contribution is a function of its rank, so every rank computes every expected
result by itself.  Reductions run a few commutative (operation, datatype) pairs and a
non-commutative user operation (composition of affine maps modulo a prime), through every
algorithm: those that need a commutative operation must fall back to an order-preserving one.
The same battery runs in-process over the loopback PML (``tests/``) and in real processes
through ``ompy run`` (``integration/coll_tuned``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ompy.mca.coll.tuned import ALGORITHMS, Settings, TunedCollModule
from ompy.mca.coll.tuned.module import SEGMENTS
from ompy.ompi.api.vector_messages import parse_vector_message
from ompy.ompi.datatype.buffer import IN_PLACE_SPEC, parse_buffer
from ompy.ompi.op import MAX, PROD, SUM, Op

COUNTS = (0, 1, 5, 37)
#: Bytes per segment: 37 doubles make five segments.
SEGMENT = 64
PRIME = 65521


def algorithms(operation: str) -> tuple[str, ...]:
    """The forceable algorithms of ``operation``, ``auto`` included (the decision rules)."""
    return ALGORITHMS[operation]


# -- data and references -------------------------------------------------------------------------


def data(rank: int, count: int, dtype: str, salt: int = 0) -> np.ndarray:
    """Rank ``rank``'s contribution: small values, so sums and products stay exact."""
    index = np.arange(count)
    return ((index * 7 + rank * 3 + salt) % 5 + 1).astype(dtype)


def affine(rank: int, count: int, salt: int = 0) -> np.ndarray:
    """Affine maps ``t -> a t + b`` (mod PRIME) encoded as ``a << 20 | b``, one per element."""
    index = np.arange(count, dtype=np.int64)
    a = (index * 5 + rank * 11 + salt) % (PRIME - 1) + 1
    b = (index * 3 + rank * 17 + salt * 7 + 1) % PRIME
    return (a << 20) | b


def compose(first: np.ndarray, then: np.ndarray) -> np.ndarray:
    """``first op then``: apply ``first``, then ``then`` (associative, not commutative)."""
    a1, b1 = first >> 20, first & 0xFFFFF
    a2, b2 = then >> 20, then & 0xFFFFF
    return ((a2 * a1 % PRIME) << 20) | ((a2 * b1 + b2) % PRIME)


def _compose_op(inmem: Any, inoutmem: Any, datatype: Any) -> None:
    incoming = np.frombuffer(inmem, dtype=np.int64)
    inout = np.frombuffer(inoutmem, dtype=np.int64)
    inout[:] = compose(incoming, inout)


COMPOSE = Op.Create(_compose_op, commute=False)

#: (name, op, dtype, contribution of a rank, numpy fold of two partial results).
REDUCTIONS = (
    ("SUM/d", SUM, "d", lambda r, n, s=0: data(r, n, "d", s), np.add),
    ("MAX/i", MAX, "i", lambda r, n, s=0: data(r, n, "i", s), np.maximum),
    ("PROD/q", PROD, "q", lambda r, n, s=0: data(r, n, "q", s) % 3 + 1, np.multiply),
    ("COMPOSE/q", COMPOSE, "q", affine, compose),
)


def reference(contribution: Any, fold: Any, ranks: range, count: int, salt: int = 0) -> Any:
    """``x[first] op ... op x[last]`` over ``ranks`` in rank order."""
    result = None
    for rank in ranks:
        value = contribution(rank, count, salt)
        result = value if result is None else fold(result, value).astype(value.dtype)
    return result


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    if not np.array_equal(got, want):
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


def spec(array: np.ndarray) -> Any:
    return parse_buffer(array, readonly=False)


def vspec(array: np.ndarray, counts: list[int], displs: list[int] | None = None) -> Any:
    if displs is None:
        displs = list(np.cumsum([0, *counts[:-1]]))
    return parse_vector_message(
        [array, (counts, [int(d) for d in displs])],
        len(counts),
        call="coll-tuned battery",
        what="buffer",
        readonly=False,
    )


# -- the checks -------------------------------------------------------------------------------


class Battery:
    """The checks of one communicator; ``passed`` collects their names."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm
        self.c = comm._c
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.module = TunedCollModule(Settings(segments=dict.fromkeys(SEGMENTS, SEGMENT)))
        self.passed: list[str] = []

    def roots(self) -> list[int]:
        return sorted({0, self.size // 2, self.size - 1})

    def ok(self, name: str) -> None:
        self.passed.append(name)

    def barrier(self) -> None:
        for name in algorithms("barrier"):
            self.module.barrier(self.c, algorithm=name)
            self.ok(f"barrier:{name}")

    def bcast(self) -> None:
        for name in algorithms("bcast"):
            for root in self.roots():
                for count in (*COUNTS, 301):
                    want = data(root, count, "d", 1)
                    buf = want.copy() if self.rank == root else np.zeros(count)
                    self.module.bcast(self.c, spec(buf), root, algorithm=name)
                    same(buf, want, f"bcast {name} root={root} count={count} size={self.size}")
            self.ok(f"bcast:{name}")

    def reduce(self) -> None:
        for name in algorithms("reduce"):
            for label, op, dtype, contribution, fold in REDUCTIONS:
                for root in self.roots():
                    for count in COUNTS:
                        for in_place in (False, True):
                            self._reduce(
                                name, label, op, dtype, contribution, fold, root, count, in_place
                            )
            self.ok(f"reduce:{name}")

    def _reduce(self, name, label, op, dtype, contribution, fold, root, count, in_place):  # noqa: PLR0917
        mine = contribution(self.rank, count)
        at_root = self.rank == root
        out = np.full(count, -1, dtype)
        if at_root and in_place:
            out[:] = mine
            send = IN_PLACE_SPEC
        else:
            send = spec(mine.copy())
        self.module.reduce(self.c, send, spec(out) if at_root else None, op, root, algorithm=name)
        if at_root:
            want = reference(contribution, fold, range(self.size), count)
            same(
                out,
                want,
                f"reduce {name} {label} root={root} count={count} "
                f"in_place={in_place} size={self.size}",
            )

    def allreduce(self) -> None:
        for name in algorithms("allreduce"):
            for label, op, dtype, contribution, fold in REDUCTIONS:
                for count in COUNTS:
                    want = reference(contribution, fold, range(self.size), count)
                    for in_place in (False, True):
                        mine = contribution(self.rank, count)
                        out = mine.copy() if in_place else np.full(count, -1, dtype)
                        send = IN_PLACE_SPEC if in_place else spec(mine)
                        self.module.allreduce(self.c, send, spec(out), op, algorithm=name)
                        same(
                            out,
                            want,
                            f"allreduce {name} {label} count={count} "
                            f"in_place={in_place} size={self.size}",
                        )
            self.ok(f"allreduce:{name}")

    def allgather(self) -> None:
        size = self.size
        for name in algorithms("allgather"):
            for count in COUNTS:
                want = np.concatenate([data(r, count, "i") for r in range(size)])
                for in_place in (False, True):
                    out = np.full(size * count, -1, "i")
                    if in_place:
                        out[self.rank * count : (self.rank + 1) * count] = data(
                            self.rank, count, "i"
                        )
                        send = IN_PLACE_SPEC
                    else:
                        send = spec(data(self.rank, count, "i"))
                    self.module.allgather(self.c, send, vspec(out, [count] * size), algorithm=name)
                    same(
                        out, want, f"allgather {name} count={count} in_place={in_place} size={size}"
                    )
            self.ok(f"allgather:{name}")

    def allgatherv(self) -> None:
        size = self.size
        counts = [(r * 5) % 4 + (r % 2) for r in range(size)]
        displs = [3 * r + sum(counts[:r]) for r in range(size)]  # gaps between the blocks
        for name in algorithms("allgatherv"):
            for in_place in (False, True):
                out = np.full(displs[-1] + counts[-1] + 2, -1, "d")
                want = out.copy()
                for r in range(size):
                    want[displs[r] : displs[r] + counts[r]] = data(r, counts[r], "d")
                mine = data(self.rank, counts[self.rank], "d")
                if in_place:
                    out[displs[self.rank] : displs[self.rank] + counts[self.rank]] = mine
                send = IN_PLACE_SPEC if in_place else spec(mine)
                self.module.allgatherv(self.c, send, vspec(out, counts, displs), algorithm=name)
                same(out, want, f"allgatherv {name} in_place={in_place} size={size}")
            self.ok(f"allgatherv:{name}")

    def alltoall(self) -> None:
        size, rank = self.size, self.rank
        for name in algorithms("alltoall"):
            for count in COUNTS:
                outgoing = np.concatenate([data(rank * size + j, count, "q") for j in range(size)])
                want = np.concatenate([data(j * size + rank, count, "q") for j in range(size)])
                for in_place in (False, True):
                    out = outgoing.copy() if in_place else np.full(size * count, -1, "q")
                    send = IN_PLACE_SPEC if in_place else vspec(outgoing, [count] * size)
                    self.module.alltoall(self.c, send, vspec(out, [count] * size), algorithm=name)
                    same(
                        out, want, f"alltoall {name} count={count} in_place={in_place} size={size}"
                    )
            self.ok(f"alltoall:{name}")

    def alltoallv(self) -> None:
        size, rank = self.size, self.rank
        for name in algorithms("alltoallv"):
            for in_place in (False, True):
                # IN_PLACE needs what i sends j to equal what j sends i in size: symmetric counts.
                amount = (lambda i, j: (i + j) % 4) if in_place else (lambda i, j: (i + 2 * j) % 4)
                sendcounts = [amount(rank, j) for j in range(size)]
                recvcounts = [amount(j, rank) for j in range(size)]
                outgoing = np.concatenate(
                    [data(rank * size + j, sendcounts[j], "d") for j in range(size)]
                )
                want = np.concatenate(
                    [data(j * size + rank, recvcounts[j], "d") for j in range(size)]
                )
                if in_place:
                    out = outgoing.copy()
                    send = IN_PLACE_SPEC
                else:
                    out = np.full(sum(recvcounts), -1.0)
                    send = vspec(outgoing, sendcounts)
                self.module.alltoallv(self.c, send, vspec(out, recvcounts), algorithm=name)
                same(out, want, f"alltoallv {name} in_place={in_place} size={size}")
            self.ok(f"alltoallv:{name}")

    def gather_scatter(self) -> None:
        for operation in ("gather", "scatter"):
            for name in algorithms(operation):
                for root in self.roots():
                    for count in COUNTS:
                        for in_place in (False, True):
                            self._rooted(operation, name, root, count, in_place)
                self.ok(f"{operation}:{name}")

    def _rooted(self, operation, name, root, count, in_place):
        size, rank = self.size, self.rank
        at_root = rank == root
        whole = np.concatenate([data(r, count, "i", 2) for r in range(size)])
        mine = data(rank, count, "i", 2)
        what = f"{operation} {name} root={root} count={count} in_place={in_place} size={size}"
        if operation == "gather":
            out = np.full(size * count, -1, "i")
            if at_root and in_place:
                out[rank * count : (rank + 1) * count] = mine
                send = IN_PLACE_SPEC
            else:
                send = spec(mine)
            recv = vspec(out, [count] * size) if at_root else None
            self.module.gather(self.c, send, recv, root, algorithm=name)
            if at_root:
                same(out, whole, what)
            return
        out = np.full(count, -1, "i")
        send = vspec(whole.copy(), [count] * size) if at_root else None
        recv = IN_PLACE_SPEC if at_root and in_place else spec(out)
        self.module.scatter(self.c, send, recv, root, algorithm=name)
        if not (at_root and in_place):
            same(out, mine, what)

    def vector_rooted(self) -> None:
        """Gatherv and scatterv: uneven blocks (zeros among them), gaps, every root, IN_PLACE."""
        size = self.size
        for salt in (0, 1):
            counts = [(r * 5 + salt * 3) % 4 + (r % 3 == 1) * 29 for r in range(size)]
            displs = [2 * r + sum(counts[:r]) for r in range(size)]  # gaps between the blocks
            length = displs[-1] + counts[-1] + 3
            for operation in ("gatherv", "scatterv"):
                for name in algorithms(operation):
                    for root in self.roots():
                        for in_place in (False, True):
                            self._vector_rooted(
                                operation, name, root, counts, displs, length, in_place
                            )
        for operation in ("gatherv", "scatterv"):
            for name in algorithms(operation):
                self.ok(f"{operation}:{name}")

    def _vector_rooted(self, operation, name, root, counts, displs, length, in_place):  # noqa: PLR0917
        size, rank = self.size, self.rank
        at_root = rank == root
        whole = np.full(length, -1.0)
        for r in range(size):
            whole[displs[r] : displs[r] + counts[r]] = data(r, counts[r], "d", 4)
        mine = data(rank, counts[rank], "d", 4)
        what = f"{operation} {name} root={root} counts={counts} in_place={in_place} size={size}"
        if operation == "gatherv":
            out = np.full(length, -1.0)
            if at_root and in_place:
                out[displs[rank] : displs[rank] + counts[rank]] = mine
                send = IN_PLACE_SPEC
            else:
                send = spec(mine)
            recv = vspec(out, counts, displs) if at_root else None
            self.module.gatherv(self.c, send, recv, root, algorithm=name)
            if at_root:
                same(out, whole, what)
            return
        out = np.full(counts[rank], -1.0)
        send = vspec(whole.copy(), counts, displs) if at_root else None
        recv = IN_PLACE_SPEC if at_root and in_place else spec(out)
        self.module.scatterv(self.c, send, recv, root, algorithm=name)
        if not (at_root and in_place):
            same(out, mine, what)

    def alltoallw(self) -> None:
        """Alltoallw: a datatype, count and byte displacement per peer, and IN_PLACE."""
        size, rank = self.size, self.rank
        kinds = ("d", "i", "h")

        def piece(sender: int, receiver: int) -> np.ndarray:
            # Symmetric kind and count, so IN_PLACE (same layout both ways) is valid too.
            pair = (sender + receiver) % 3
            return data(sender * size + receiver, pair + 1, kinds[pair])

        expected = [piece(j, rank) for j in range(size)]
        for name in algorithms("alltoallw"):
            for in_place in (False, True):
                outgoing = [piece(rank, j) for j in range(size)]
                if in_place:
                    out, send_specs = outgoing, None
                else:
                    out = [np.full(len(want), -1, want.dtype) for want in expected]
                    send_specs = self._w_specs(outgoing)
                self.module.alltoallw(self.c, send_specs, self._w_specs(out), algorithm=name)
                for j in range(size):
                    what = f"alltoallw {name} from {j} in_place={in_place} size={size}"
                    same(out[j], expected[j], what)
            self.ok(f"alltoallw:{name}")

    @staticmethod
    def _w_specs(arrays: list[np.ndarray]) -> tuple[Any, ...]:
        return tuple(parse_buffer(array, readonly=False) for array in arrays)

    def reduce_scatter(self) -> None:
        size, rank = self.size, self.rank
        for operation in ("reduce_scatter_block", "reduce_scatter"):
            for name in algorithms(operation):
                for label, op, dtype, contribution, fold in REDUCTIONS:
                    for count in COUNTS[:3]:
                        if operation == "reduce_scatter_block":
                            counts = [count] * size
                        else:
                            counts = [(count + r) % 4 for r in range(size)]
                        total = sum(counts)
                        start = sum(counts[:rank])
                        want = reference(contribution, fold, range(size), total)
                        want = want[start : start + counts[rank]]
                        for in_place in (False, True):
                            mine = contribution(rank, total)
                            out = mine.copy() if in_place else np.full(counts[rank], -1, dtype)
                            send = IN_PLACE_SPEC if in_place else spec(mine)
                            recv = parse_buffer([out, counts[rank]], readonly=False)
                            if operation == "reduce_scatter_block":
                                self.module.reduce_scatter_block(
                                    self.c, send, recv, op, algorithm=name
                                )
                            else:
                                self.module.reduce_scatter(
                                    self.c, send, recv, tuple(counts), op, algorithm=name
                                )
                            same(
                                out[: counts[rank]],
                                want,
                                f"{operation} {name} {label} "
                                f"counts={counts} in_place={in_place} size={size}",
                            )
                self.ok(f"{operation}:{name}")

    def scans(self) -> None:
        size, rank = self.size, self.rank
        for operation in ("scan", "exscan"):
            for name in algorithms(operation):
                for label, op, dtype, contribution, fold in REDUCTIONS:
                    for count in COUNTS:
                        last = rank if operation == "scan" else rank - 1
                        for in_place in (False, True):
                            mine = contribution(rank, count)
                            out = mine.copy() if in_place else np.full(count, -1, dtype)
                            before = out.copy()
                            send = IN_PLACE_SPEC if in_place else spec(mine)
                            getattr(self.module, operation)(
                                self.c, send, spec(out), op, algorithm=name
                            )
                            what = (
                                f"{operation} {name} {label} count={count} "
                                f"in_place={in_place} size={size}"
                            )
                            if last >= 0:
                                want = reference(contribution, fold, range(last + 1), count)
                                same(out, want, what)
                            elif not in_place:
                                same(out, before, what + " (rank 0 untouched)")
                self.ok(f"{operation}:{name}")

    def nonblocking(self) -> None:
        """Nonblocking forms of every algorithm, overlapped with point-to-point traffic."""
        comm, size, rank = self.comm, self.size, self.rank
        right, left = (rank + 1) % size, (rank - 1) % size
        cases = [("ibarrier", name) for name in algorithms("barrier")]
        cases += [("ibcast", name) for name in algorithms("bcast")]
        cases += [("ireduce", name) for name in algorithms("reduce")]
        cases += [("iallreduce", name) for name in algorithms("allreduce")]
        cases += [("iallgather", name) for name in algorithms("allgather")]
        cases += [("ialltoall", name) for name in algorithms("alltoall")]
        count = 37
        for operation, name in cases:
            token = np.array([rank, 7], "i")
            inbox = np.full(2, -1, "i")
            receive = comm.Irecv(inbox, source=left, tag=5)
            root = size - 1
            buf = data(root, count, "d") if rank == root else np.zeros(count)
            mine = affine(rank, count)
            out = np.zeros(count, "q")
            gathered = np.full(size * count, -1, "d")
            outgoing = np.concatenate([data(rank * size + j, 3, "d") for j in range(size)])
            exchanged = np.zeros(size * 3)
            if operation == "ibarrier":
                request = self.module.ibarrier(self.c, algorithm=name)
            elif operation == "ibcast":
                request = self.module.ibcast(self.c, spec(buf), root, algorithm=name)
            elif operation == "ireduce":
                recv = spec(out) if rank == root else None
                request = self.module.ireduce(
                    self.c, spec(mine), recv, COMPOSE, root, algorithm=name
                )
            elif operation == "iallreduce":
                request = self.module.iallreduce(
                    self.c, spec(mine), spec(out), COMPOSE, algorithm=name
                )
            elif operation == "iallgather":
                request = self.module.iallgather(
                    self.c,
                    spec(data(rank, count, "d")),
                    vspec(gathered, [count] * size),
                    algorithm=name,
                )
            else:
                request = self.module.ialltoall(
                    self.c,
                    vspec(outgoing, [3] * size),
                    vspec(exchanged, [3] * size),
                    algorithm=name,
                )
            comm.Send(token, dest=right, tag=5)  # blocking point-to-point while it is in flight
            receive.Wait()
            same(inbox, np.array([left, 7], "i"), f"{operation} {name}: point-to-point beside it")
            self.c.engine.wait_until(lambda request=request: request.complete)
            if request.exception is not None:
                raise request.exception
            what = f"{operation} {name} size={size}"
            if operation == "ibcast":
                same(buf, data(root, count, "d"), what)
            elif (operation == "ireduce" and rank == root) or operation == "iallreduce":
                same(out, reference(affine, compose, range(size), count), what)
            elif operation == "iallgather":
                same(gathered, np.concatenate([data(r, count, "d") for r in range(size)]), what)
            elif operation == "ialltoall":
                want = np.concatenate([data(j * size + rank, 3, "d") for j in range(size)])
                same(exchanged, want, what)
            self.ok(f"{operation}:{name}")

    def everything(self) -> list[str]:
        self.barrier()
        self.bcast()
        self.reduce()
        self.allreduce()
        self.allgather()
        self.allgatherv()
        self.alltoall()
        self.alltoallv()
        self.gather_scatter()
        self.vector_rooted()
        self.alltoallw()
        self.reduce_scatter()
        self.scans()
        self.nonblocking()
        return self.passed


def run_battery(comm: Any) -> list[str]:
    """Every algorithm on ``comm`` and, when it has 3 ranks or more, on its halves."""
    passed = Battery(comm).everything()
    if comm.Get_size() >= 3:
        half = comm.Split(comm.Get_rank() % 2, -comm.Get_rank())  # reversed rank order
        try:
            passed += [f"split:{name}" for name in Battery(half).everything()]
        finally:
            half.Free()
    return passed
