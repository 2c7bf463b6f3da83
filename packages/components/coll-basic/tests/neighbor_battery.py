"""Every neighbor collective on Cartesian, graph and distributed-graph communicators, checked.

``run_neighbor_battery(comm)`` runs on every member of ``comm`` (an ``Intracomm`` of any size),
builds a set of topologies from it and checks, on each, every neighbor collective (blocking,
nonblocking, vector, general and object forms) against what MPI defines; it returns the names
of the checks that passed and raises ``AssertionError`` naming the topology and the call on the
first wrong result.  ``halo_exchange(comm)`` is the 2-D halo exchange of issue 15: the same
periodic field exchanged with ``Neighbor_alltoallw`` and with ``Sendrecv`` must come out equal.

The expected results are computed locally from the topology's own neighbour lists (gathered
from every member) and MPI's matching rules: block ``i`` of a sender goes along its out-edge
``i``; on a Cartesian communicator the block a process sends in the negative direction of a
dimension lands in the receiver's positive-direction block and vice versa (``j ^ 1``, which
matters when a periodic dimension of extent 1 or 2 makes both neighbours the same process); on
graphs the k-th edge from a process matches the k-th edge to it.  A receive block whose source
is ``PROC_NULL`` must keep its sentinel.  The same battery runs in-process on the loopback PML
(this package's tests) and through ``ompy run`` (``integration/neighbor``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

SENTINEL = -7
GAP = 1  # elements left between the blocks of a vector receive (they must stay SENTINEL)


class Edges:
    """The neighbour lists of every member of a topology communicator, and who matches whom."""

    def __init__(self, topo: Any, cartesian: bool) -> None:
        self.rank = topo.Get_rank()
        self.cartesian = cartesian
        self.inedges = list(topo.inedges)
        self.outedges = list(topo.outedges)
        lists = topo.allgather((self.inedges, self.outedges))
        self.everyone_out = [out for _, out in lists]

    def sender_block(self, j: int) -> int:
        """The block index, at ``inedges[j]``, whose data lands in this member's block ``j``."""
        source = self.inedges[j]
        theirs = self.everyone_out[source]
        if self.cartesian:
            block = j ^ 1
            assert theirs[block] == self.rank, (j, source, theirs)
            return block
        k = self.inedges[: j + 1].count(source) - 1  # the k-th edge from source ...
        mine = [i for i, dest in enumerate(theirs) if dest == self.rank]
        return mine[k]  # ... matches the k-th edge to this member


def _value(sender: int, block: int, k: int) -> int:
    return sender * 10_000 + block * 100 + k


def _count(sender: int, block: int) -> int:
    """Elements a sender puts in its block (vector forms): 0 to 3, varying per edge."""
    return (sender + 2 * block) % 4


def _blocks(sender: int, count_of: Callable[[int], int], blocks: int) -> np.ndarray:
    return np.concatenate(
        [
            np.array([_value(sender, i, k) for k in range(count_of(i))], dtype=np.int64)
            for i in range(blocks)
        ]
        or [np.zeros(0, dtype=np.int64)]
    )


def _check(got: Any, expected: Any, what: str) -> None:
    if isinstance(got, np.ndarray):
        assert np.array_equal(got, expected), f"{what}: got {got.tolist()}, want {expected}"
    else:
        assert got == expected, f"{what}: got {got!r}, want {expected!r}"


def _check_topology(MPI: Any, topo: Any, name: str, cartesian: bool, passed: list[str]) -> None:
    edges = Edges(topo, cartesian)
    rank, null = edges.rank, MPI.PROC_NULL
    indeg, outdeg = len(edges.inedges), len(edges.outedges)
    assert (topo.indegree, topo.outdegree) == (indeg, outdeg), name

    def expected_regular(count: int, per_sender: bool) -> np.ndarray:
        out = np.full(indeg * count, SENTINEL, dtype=np.int64)
        for j, source in enumerate(edges.inedges):
            if source != null:
                block = 0 if per_sender else edges.sender_block(j)
                out[j * count : (j + 1) * count] = [_value(source, block, k) for k in range(count)]
        return out

    # -- Neighbor_allgather: this member's one block to every out-neighbour
    for count in (0, 1, 5):
        send = np.array([_value(rank, 0, k) for k in range(count)], dtype=np.int64)
        recv = np.full(indeg * count, SENTINEL, dtype=np.int64)
        topo.Neighbor_allgather(send, recv)
        _check(recv, expected_regular(count, True), f"{name} Neighbor_allgather x{count}")
        recv[:] = SENTINEL
        topo.Ineighbor_allgather([send, MPI.INT64_T], [recv, count, MPI.INT64_T]).Wait()
        _check(recv, expected_regular(count, True), f"{name} Ineighbor_allgather x{count}")
    passed.append(f"{name} allgather")

    # -- Neighbor_alltoall: block i along out-edge i
    for count in (0, 1, 4):
        send = np.array(
            [_value(rank, i, k) for i in range(outdeg) for k in range(count)], dtype=np.int64
        )
        recv = np.full(indeg * count, SENTINEL, dtype=np.int64)
        topo.Neighbor_alltoall(send, recv)
        _check(recv, expected_regular(count, False), f"{name} Neighbor_alltoall x{count}")
        recv[:] = SENTINEL
        topo.Ineighbor_alltoall([send, count, MPI.INT64_T], [recv, count, MPI.INT64_T]).Wait()
        _check(recv, expected_regular(count, False), f"{name} Ineighbor_alltoall x{count}")
    passed.append(f"{name} alltoall")

    # -- a duplicate keeps the topology, and its neighbor collectives
    dup = topo.Dup()
    try:
        send = np.array([_value(rank, i, 0) for i in range(outdeg)], dtype=np.int64)
        recv = np.full(indeg, SENTINEL, dtype=np.int64)
        dup.Neighbor_alltoall(send, recv)
        _check(recv, expected_regular(1, False), f"{name} Dup().Neighbor_alltoall")
    finally:
        dup.Free()
    passed.append(f"{name} dup")

    # -- vector forms: counts vary per edge, gaps between receive blocks stay SENTINEL
    def recv_layout(count_of_j: Callable[[int], int]) -> tuple[list[int], list[int], int]:
        counts = [count_of_j(j) for j in range(indeg)]
        displs, at = [], 0
        for c in counts:
            displs.append(at)
            at += c + GAP
        return counts, displs, at

    def expected_vector(counts, displs, total, block_of) -> np.ndarray:
        out = np.full(total, SENTINEL, dtype=np.int64)
        for j, source in enumerate(edges.inedges):
            if source != null:
                b = block_of(j)
                out[displs[j] : displs[j] + counts[j]] = [
                    _value(source, b, k) for k in range(counts[j])
                ]
        return out

    def source_count(j: int, block_of: Callable[[int], int]) -> int:
        source = edges.inedges[j]
        return 2 if source == null else _count(source, block_of(j))

    mine = _count(rank, 0)
    send = np.array([_value(rank, 0, k) for k in range(mine)], dtype=np.int64)
    counts, displs, total = recv_layout(lambda j: source_count(j, lambda _: 0))
    want = expected_vector(counts, displs, total, lambda _: 0)
    for nonblocking in (False, True):
        recv = np.full(total, SENTINEL, dtype=np.int64)
        if nonblocking:
            topo.Ineighbor_allgatherv(send, [recv, (counts, displs), MPI.INT64_T]).Wait()
        else:
            topo.Neighbor_allgatherv(send, [recv, (counts, displs), MPI.INT64_T])
        _check(recv, want, f"{name} Neighbor_allgatherv nonblocking={nonblocking}")
    passed.append(f"{name} allgatherv")

    scounts = [_count(rank, i) for i in range(outdeg)]
    sdispls = [sum(scounts[:i]) for i in range(outdeg)]
    send = _blocks(rank, lambda i: _count(rank, i), outdeg)
    counts, displs, total = recv_layout(lambda j: source_count(j, edges.sender_block))
    want = expected_vector(counts, displs, total, edges.sender_block)
    for nonblocking in (False, True):
        recv = np.full(total, SENTINEL, dtype=np.int64)
        smsg = [send, (scounts, sdispls), MPI.INT64_T]
        rmsg = [recv, (counts, displs), MPI.INT64_T]
        if nonblocking:
            topo.Ineighbor_alltoallv(smsg, rmsg).Wait()
        else:
            topo.Neighbor_alltoallv(smsg, rmsg)
        _check(recv, want, f"{name} Neighbor_alltoallv nonblocking={nonblocking}")
    passed.append(f"{name} alltoallv")

    # -- Neighbor_alltoallw: byte displacements; odd receive blocks land strided (a vector type)
    strided = {}
    rtypes, rdispls, rcounts, at = [], [], [], 0
    for j in range(indeg):
        c = source_count(j, edges.sender_block)
        if j % 2 and c:
            strided[c] = strided.get(c) or MPI.INT64_T.Create_vector(c, 1, 2).Commit()
            rtypes.append(strided[c])
            rcounts.append(1)
            rdispls.append(at * 8)
            at += 2 * c
        else:
            rtypes.append(MPI.INT64_T)
            rcounts.append(c)
            rdispls.append(at * 8)
            at += c
        at += GAP
    want = np.full(at, SENTINEL, dtype=np.int64)
    for j, source in enumerate(edges.inedges):
        if source == null:
            continue
        b, start = edges.sender_block(j), rdispls[j] // 8
        values = [_value(source, b, k) for k in range(source_count(j, edges.sender_block))]
        step = 2 if rtypes[j] is not MPI.INT64_T else 1
        want[start : start + step * len(values) : step] = values
    for nonblocking in (False, True):
        recv = np.full(at, SENTINEL, dtype=np.int64)
        smsg = [send, (scounts, [d * 8 for d in sdispls]), [MPI.INT64_T] * outdeg]
        rmsg = [recv, (rcounts, rdispls), rtypes]
        if nonblocking:
            topo.Ineighbor_alltoallw(smsg, rmsg).Wait()
        else:
            topo.Neighbor_alltoallw(smsg, rmsg)
        _check(recv, want, f"{name} Neighbor_alltoallw nonblocking={nonblocking}")
    for datatype in strided.values():
        datatype.Free()
    passed.append(f"{name} alltoallw")

    # -- several nonblocking neighbor collectives in flight together, completed in reverse
    sends = [np.full(3, _value(rank, 0, n), dtype=np.int64) for n in range(3)]
    recvs = [np.full(3 * indeg, SENTINEL, dtype=np.int64) for _ in range(3)]
    requests = [topo.Ineighbor_allgather(s, r) for s, r in zip(sends, recvs, strict=True)]
    for request in reversed(requests):
        request.Wait()
    for n, recv in enumerate(recvs):
        want = np.full(3 * indeg, SENTINEL, dtype=np.int64)
        for j, source in enumerate(edges.inedges):
            if source != null:
                want[3 * j : 3 * j + 3] = _value(source, 0, n)
        _check(recv, want, f"{name} Ineighbor_allgather in flight #{n}")
    passed.append(f"{name} in flight")

    # -- Python objects
    got = topo.neighbor_allgather({"from": rank})
    want_objects = [None if s == null else {"from": s} for s in edges.inedges]
    _check(got, want_objects, f"{name} neighbor_allgather")
    got = topo.neighbor_alltoall([("edge", rank, i, np.arange(i)) for i in range(outdeg)])
    got = [None if item is None else (item[:3], item[3].tolist()) for item in got]
    want_objects = [
        None
        if s == null
        else (("edge", s, edges.sender_block(j)), list(range(edges.sender_block(j))))
        for j, s in enumerate(edges.inedges)
    ]
    _check(got, want_objects, f"{name} neighbor_alltoall")
    got = topo.neighbor_alltoall(None)
    _check(got, [None] * indeg, f"{name} neighbor_alltoall(None)")
    big = np.arange(100_000, dtype=np.float64) + rank  # out-of-band buffers, every edge
    got = topo.neighbor_allgather(big)
    for j, s in enumerate(edges.inedges):
        if s != null:
            _check(got[j], np.arange(100_000, dtype=np.float64) + s, f"{name} big object {j}")
    passed.append(f"{name} objects")

    # -- bad arguments fail on every member before any communication
    for call, args in (
        ("Neighbor_allgather", (MPI.IN_PLACE, np.zeros(indeg, dtype=np.int64))),
        ("Neighbor_alltoall", (None, np.zeros(indeg, dtype=np.int64))),
    ):
        try:
            getattr(topo, call)(*args)
        except (ValueError, TypeError) as error:
            assert "Neighbor" in str(error), str(error)
        else:
            raise AssertionError(f"{name} {call} accepted {args[0]!r}")
    try:
        topo.neighbor_alltoall([0] * (outdeg + 1))
    except ValueError as error:
        assert f"expecting {outdeg} items" in str(error), str(error)
    else:
        raise AssertionError(f"{name} neighbor_alltoall accepted too many items")
    passed.append(f"{name} errors")


def _topologies(MPI: Any, comm: Any) -> list[tuple[str, Any, bool]]:
    """(name, topology communicator or COMM_NULL, is Cartesian) for this member."""
    size, rank = comm.Get_size(), comm.Get_rank()
    found = [
        ("cart 1-d periodic", comm.Create_cart([size], [True]), True),
        ("cart 1-d open", comm.Create_cart([size], [False]), True),
        ("cart 2-d", comm.Create_cart(MPI.Compute_dims(size, 2), [True, False]), True),
        ("cart 1xNx1 periodic", comm.Create_cart([1, size, 1], [True, True, True]), True),
        ("cart short", comm.Create_cart([max(size - 1, 1)], [True]), True),
    ]
    # A ring with a self-loop: neighbours +1, -1 and itself (duplicates on 1 and 2 ranks).
    index, edges = [], []
    for node in range(size):
        edges += [(node + 1) % size, (node - 1) % size, node]
        index.append(len(edges))
    found.append(("graph ring", comm.Create_graph(index, edges), False))
    sources = [(rank - 1) % size, (rank - 2) % size, rank]
    destinations = [(rank + 1) % size, (rank + 2) % size, rank]
    found.append(
        (
            "dist graph adjacent",
            comm.Create_dist_graph_adjacent(sources, destinations, [1, 2, 3], [1, 2, 3]),
            False,
        )
    )
    found.append(
        (
            "dist graph one-way",
            comm.Create_dist_graph_adjacent([(rank - 1) % size], [(rank + 1) % size]),
            False,
        )
    )
    found.append(("dist graph empty", comm.Create_dist_graph_adjacent([], []), False))
    # Every member names two edges out of itself; the lists come from the topology.
    found.append(
        (
            "dist graph",
            comm.Create_dist_graph([rank], [2], [(rank + 1) % size, (rank + 3) % size]),
            False,
        )
    )
    return found


def run_neighbor_battery(MPI: Any, comm: Any) -> list[str]:
    """Every neighbor collective on every topology of :func:`_topologies`; the checks passed."""
    passed: list[str] = []
    for name, topo, cartesian in _topologies(MPI, comm):
        if topo == MPI.COMM_NULL:
            continue
        try:
            _check_topology(MPI, topo, name, cartesian, passed)
        finally:
            topo.Free()
    passed.extend(halo_exchange(MPI, comm))
    return passed


# -- the 2-D halo exchange of issue 15 -------------------------------------------------------------


def halo_exchange(MPI: Any, comm: Any, ny: int = 5, nx: int = 4) -> list[str]:
    """A periodic 2-D field with one ghost layer, exchanged with ``Neighbor_alltoallw`` and with
    ``Sendrecv``: both must give the same field, and every ghost the neighbour's edge."""
    dims = MPI.Compute_dims(comm.Get_size(), 2)
    cart = comm.Create_cart(dims, [True, True])
    try:
        py, px = cart.Get_coords(cart.Get_rank())

        # The global field: value of global cell (Y, X) is Y * 1000 + X.
        def interior() -> np.ndarray:
            field = np.full((ny + 2, nx + 2), -1.0)
            ys = np.arange(py * ny, (py + 1) * ny)[:, None]
            xs = np.arange(px * nx, (px + 1) * nx)[None, :]
            field[1:-1, 1:-1] = ys * 1000.0 + xs
            return field

        sizes = [ny + 2, nx + 2]

        def face(subsizes: list[int], starts: list[int]) -> Any:
            return MPI.DOUBLE.Create_subarray(sizes, subsizes, starts).Commit()

        # Send faces (interior) and receive faces (ghosts), in the neighbour order of a
        # Cartesian communicator: dimension 0 (rows) -1 then +1, dimension 1 (columns) -1, +1.
        send_types = [
            face([1, nx], [1, 1]),  # low row, to the -1 neighbour in y
            face([1, nx], [ny, 1]),  # high row, to +1 in y
            face([ny, 1], [1, 1]),  # low column, to -1 in x
            face([ny, 1], [1, nx]),  # high column, to +1 in x
        ]
        recv_types = [
            face([1, nx], [0, 1]),  # low ghost row, from -1 in y
            face([1, nx], [ny + 1, 1]),  # high ghost row, from +1 in y
            face([ny, 1], [1, 0]),  # low ghost column, from -1 in x
            face([ny, 1], [1, nx + 1]),  # high ghost column, from +1 in x
        ]
        ones, zeros = [1] * 4, [0] * 4
        neighbor = interior()
        cart.Neighbor_alltoallw(
            [neighbor, (ones, zeros), send_types], [neighbor, (ones, zeros), recv_types]
        )
        nonblocking = interior()
        cart.Ineighbor_alltoallw(
            [nonblocking.copy(), (ones, zeros), send_types],
            [nonblocking, (ones, zeros), recv_types],
        ).Wait()

        classic = interior()
        for dimension in (0, 1):
            below, above = cart.Shift(dimension, 1)
            low, high = 2 * dimension, 2 * dimension + 1
            cart.Sendrecv(
                [classic, 1, send_types[high]], above, 7, [classic, 1, recv_types[low]], below, 7
            )
            cart.Sendrecv(
                [classic, 1, send_types[low]], below, 8, [classic, 1, recv_types[high]], above, 8
            )
        for datatype in send_types + recv_types:
            datatype.Free()

        assert np.array_equal(neighbor, classic), (
            f"halo: Neighbor_alltoallw gave\n{neighbor}\nSendrecv gave\n{classic}"
        )
        assert np.array_equal(nonblocking, classic), "halo: Ineighbor_alltoallw differs"
        # And both are right: every ghost holds the periodic neighbour cell's value.
        gy, gx = dims[0] * ny, dims[1] * nx
        ys = (np.arange(py * ny - 1, (py + 1) * ny + 1) % gy)[:, None]
        xs = (np.arange(px * nx - 1, (px + 1) * nx + 1) % gx)[None, :]
        want = ys * 1000.0 + xs
        want[0, 0] = want[0, -1] = want[-1, 0] = want[-1, -1] = -1.0  # corners: not exchanged
        assert np.array_equal(classic, want), f"halo: wrong field\n{classic}\nwant\n{want}"
    finally:
        cart.Free()
    return [f"halo {dims[0]}x{dims[1]}"]
