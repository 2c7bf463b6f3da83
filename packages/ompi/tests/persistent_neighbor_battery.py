"""Persistent neighbor collectives against their blocking forms, on every kind of topology.

``run_persistent_neighbor_battery(MPI, comm)`` runs on every member of ``comm``: for each
topology of the neighbor battery (``packages/components/coll-basic/tests/neighbor_battery.py``:
Cartesian ones periodic and not, a graph with self-loops and duplicate edges, distributed
graphs) it initializes every ``Neighbor_*_init`` once and starts it several times with new
data, and after each start compares the receive buffer with what the blocking form gives on
the same data (the blocking forms are checked against MPI's definition by that battery).  A
2-D halo exchange written with ``Neighbor_alltoallw_init`` on subarray datatypes (stand-ins
refilled per start) is compared with the blocking ``Neighbor_alltoallw`` the same way.  It
returns the names of the checks that passed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "components/coll-basic/tests"))
import neighbor_battery

SENTINEL = -7.0
STARTS = 3


def _data(shape: Any, rank: int, start: int, salt: int = 0) -> np.ndarray:
    count = int(np.prod(shape))
    return ((np.arange(count) + 5 * rank + 11 * start + 3 * salt) % 17 + 1).reshape(shape)


def _cases(MPI: Any, topo: Any, cartesian: bool) -> list[tuple[str, Any, Any, Any, Any]]:
    """(name, persistent request, refill(start), blocking(receive buffer), receive buffer)."""
    rank = topo.Get_rank()
    indegree, outdegree = len(topo.inedges), len(topo.outedges)
    n = 3
    cases = []

    sa, ra = np.zeros(n), np.full(n * indegree, SENTINEL)
    cases.append(
        (
            "allgather",
            topo.Neighbor_allgather_init(sa, ra),
            lambda t: sa.__setitem__(..., _data(n, rank, t)),
            lambda out: topo.Neighbor_allgather(sa, out),
            ra,
        )
    )
    counts = [2] * indegree  # what every member sends
    displs = [3 * j for j in range(indegree)]  # one gap element after each block
    sv = np.zeros(2)
    rv = np.full(3 * indegree, SENTINEL)
    vector = [counts, displs, MPI.DOUBLE]
    cases.append(
        (
            "allgatherv",
            topo.Neighbor_allgatherv_init(sv, [rv, *vector]),
            lambda t: sv.__setitem__(..., _data(2, rank, t)),
            lambda out: topo.Neighbor_allgatherv(sv, [out, *vector]),
            rv,
        )
    )
    # Flat buffers: a process without neighbours has empty ones (numpy's (0, n) arrays do not
    # export as flat bytes).
    st, rt = np.zeros(outdegree * n), np.full(indegree * n, SENTINEL)
    cases.append(
        (
            "alltoall",
            topo.Neighbor_alltoall_init(st, rt),
            lambda t: st.__setitem__(..., _data(st.size, rank, t)),
            lambda out: topo.Neighbor_alltoall(st, out),
            rt,
        )
    )
    scounts = [(i % 3) + 1 for i in range(outdegree)]
    sdispls = [sum(scounts[:i]) for i in range(outdegree)]
    svv = np.zeros(sum(scounts))
    rvv = np.full(3 * indegree, SENTINEL)
    # Exactly what arrives on each in-edge (a sender puts (i % 3) + 1 on its out-edge i); the
    # rest of each 3-element block stays SENTINEL, as does a PROC_NULL edge's block.
    edges = neighbor_battery.Edges(topo, cartesian)
    rcounts = [
        3 if source == MPI.PROC_NULL else edges.sender_block(j) % 3 + 1
        for j, source in enumerate(topo.inedges)
    ]
    rdispls = [3 * j for j in range(indegree)]
    cases.append(
        (
            "alltoallv",
            topo.Neighbor_alltoallv_init(
                [svv, scounts, sdispls, MPI.DOUBLE], [rvv, rcounts, rdispls, MPI.DOUBLE]
            ),
            lambda t: svv.__setitem__(..., _data(svv.size, rank, t)),
            lambda out: topo.Neighbor_alltoallv(
                [svv, scounts, sdispls, MPI.DOUBLE], [out, rcounts, rdispls, MPI.DOUBLE]
            ),
            rvv,
        )
    )
    sw = np.zeros(outdegree * 2)
    rw = np.full(indegree * 2, SENTINEL)
    smsg = ([2] * outdegree, [16 * i for i in range(outdegree)]), [MPI.DOUBLE] * outdegree
    rmsg = ([2] * indegree, [16 * j for j in range(indegree)]), [MPI.DOUBLE] * indegree
    cases.append(
        (
            "alltoallw",
            topo.Neighbor_alltoallw_init([sw, *smsg], [rw, *rmsg]),
            lambda t: sw.__setitem__(..., _data(sw.size, rank, t)),
            lambda out: topo.Neighbor_alltoallw([sw, *smsg], [out, *rmsg]),
            rw,
        )
    )
    return cases


def _check_topology(MPI: Any, topo: Any, name: str, cartesian: bool, passed: list[str]) -> None:
    cases = _cases(MPI, topo, cartesian)
    for start in range(STARTS):
        for operation, request, refill, blocking, received in cases:
            refill(start)
            expected = received.copy()
            blocking(expected)
            received[...] = expected + 1000  # stale data everywhere the start must write ...
            untouched = expected == SENTINEL
            received[untouched] = SENTINEL  # ... but where nothing arrives (PROC_NULL, gaps)
            request.Start()
            request.Wait()
            if not np.array_equal(received, expected):
                raise AssertionError(
                    f"{name} Neighbor_{operation}_init, start {start} on rank "
                    f"{topo.Get_rank()}: got {received!r}, the blocking form gives {expected!r}"
                )
    for operation, request, *_ in cases:
        request.Free()
        passed.append(f"{name} {operation}")


def _halo(MPI: Any, comm: Any, passed: list[str], ny: int = 4, nx: int = 3) -> None:
    """A periodic 2-D field with one ghost layer: Neighbor_alltoallw_init on subarrays."""
    cart = comm.Create_cart(MPI.Compute_dims(comm.Get_size(), 2), [True, True])
    rank = cart.Get_rank()
    shape = [ny + 2, nx + 2]

    def face(subsizes: list[int], starts: list[int]) -> Any:
        return MPI.DOUBLE.Create_subarray(shape, subsizes, starts).Commit()

    # Cartesian neighbour order: dim 0 -1, dim 0 +1, dim 1 -1, dim 1 +1.
    sends = [
        face([1, nx], [1, 1]),
        face([1, nx], [ny, 1]),
        face([ny, 1], [1, 1]),
        face([ny, 1], [1, nx]),
    ]
    recvs = [
        face([1, nx], [0, 1]),
        face([1, nx], [ny + 1, 1]),
        face([ny, 1], [1, 0]),
        face([ny, 1], [1, nx + 1]),
    ]
    field = np.zeros(shape)
    reference = np.zeros(shape)
    message = ([1] * 4, [0] * 4)
    request = cart.Neighbor_alltoallw_init([field, message, sends], [field, message, recvs])
    try:
        for step in range(STARTS):
            field[...] = SENTINEL
            field[1:-1, 1:-1] = _data((ny, nx), rank, step)
            reference[...] = field
            cart.Neighbor_alltoallw([reference, message, sends], [reference, message, recvs])
            request.Start()
            request.Wait()
            if not np.array_equal(field, reference):
                raise AssertionError(f"halo exchange step {step} on rank {rank}")
        passed.append("halo Neighbor_alltoallw_init")
    finally:
        request.Free()
        for datatype in sends + recvs:
            datatype.Free()
        cart.Free()


def run_persistent_neighbor_battery(MPI: Any, comm: Any) -> list[str]:
    """Every ``Neighbor_*_init`` on every topology of the neighbor battery; checks passed."""
    passed: list[str] = []
    for name, topo, cartesian in neighbor_battery._topologies(MPI, comm):
        if topo == MPI.COMM_NULL:
            continue
        try:
            _check_topology(MPI, topo, name, cartesian, passed)
        finally:
            topo.Free()
    _halo(MPI, comm, passed)
    return passed
