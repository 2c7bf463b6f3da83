"""``None`` as a collective's buffer: ``MPI.IN_PLACE`` where mpi4py allows it, else TypeError.

Every collective that takes ``IN_PLACE`` gives the same result with ``None``; where ``None`` is
not a message, every rank raises ``TypeError`` from its own arguments, before communicating, so
no rank is left blocked in the collective.
"""

import numpy as np
import pytest

from ompy.ompi.api.request import Request
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.constants import IN_PLACE
from ompy.ompi.datatype import predefined as mpi
from ompy.ompi.op import MAX, SUM

SIZE = 3


def own(rank, n=SIZE):
    """Rank ``rank``'s row of a SIZE x n table (distinct values per rank and column)."""
    return np.arange(n, dtype="i") + 10 * rank


def table(n=SIZE):
    return np.concatenate([own(r, n) for r in range(SIZE)])


def gather(comm, place, nonblocking):
    rank = comm.Get_rank()
    if rank == 0:
        out = np.zeros(SIZE * 2, "i")
        out[0:2] = own(0, 2)
        call = comm.Igather if nonblocking else comm.Gather
        request = call(place, out, root=0)
        return out, request
    call = comm.Igather if nonblocking else comm.Gather
    return None, call(own(rank, 2), None, root=0)


def gatherv(comm, place, nonblocking):
    rank = comm.Get_rank()
    call = comm.Igatherv if nonblocking else comm.Gatherv
    if rank == 1:
        out = np.zeros(SIZE * 2, "i")
        out[2:4] = own(1, 2)
        return out, call(place, [out, [2] * SIZE, [0, 2, 4], mpi.INT], root=1)
    return None, call(own(rank, 2), None, root=1)


def scatter(comm, place, nonblocking):
    rank = comm.Get_rank()
    call = comm.Iscatter if nonblocking else comm.Scatter
    if rank == 2:
        whole = table(2).copy()
        return whole, call(whole, place, root=2)
    out = np.zeros(2, "i")
    return out, call(None, out, root=2)


def scatterv(comm, place, nonblocking):
    rank = comm.Get_rank()
    call = comm.Iscatterv if nonblocking else comm.Scatterv
    if rank == 0:
        whole = table(2).copy()
        return whole, call([whole, [2] * SIZE, [0, 2, 4], mpi.INT], place, root=0)
    out = np.zeros(2, "i")
    return out, call(None, out, root=0)


def allgather(comm, place, nonblocking):
    rank = comm.Get_rank()
    out = np.zeros(SIZE * 2, "i")
    out[2 * rank : 2 * rank + 2] = own(rank, 2)
    call = comm.Iallgather if nonblocking else comm.Allgather
    return out, call(place, out)


def allgatherv(comm, place, nonblocking):
    rank = comm.Get_rank()
    out = np.zeros(SIZE * 2, "i")
    out[2 * rank : 2 * rank + 2] = own(rank, 2)
    call = comm.Iallgatherv if nonblocking else comm.Allgatherv
    return out, call(place, [out, [2] * SIZE, [0, 2, 4], mpi.INT])


def alltoall(comm, place, nonblocking):
    out = own(comm.Get_rank(), SIZE * 2).copy()
    call = comm.Ialltoall if nonblocking else comm.Alltoall
    return out, call(place, out)


def alltoallv(comm, place, nonblocking):
    out = own(comm.Get_rank(), SIZE * 2).copy()
    call = comm.Ialltoallv if nonblocking else comm.Alltoallv
    return out, call(place, [out, [2] * SIZE, [0, 2, 4], mpi.INT])


def alltoallw(comm, place, nonblocking):
    out = own(comm.Get_rank(), SIZE).copy()
    call = comm.Ialltoallw if nonblocking else comm.Alltoallw
    return out, call(place, [out, [1] * SIZE, [0, 4, 8], [mpi.INT] * SIZE])


def reduce(comm, place, nonblocking):
    rank = comm.Get_rank()
    call = comm.Ireduce if nonblocking else comm.Reduce
    if rank == 1:
        out = own(1).copy()
        return out, call(place, out, op=SUM, root=1)
    return None, call(own(rank), None, op=SUM, root=1)


def allreduce(comm, place, nonblocking):
    out = own(comm.Get_rank()).copy()
    call = comm.Iallreduce if nonblocking else comm.Allreduce
    return out, call(place, out, op=MAX)


def scan(comm, place, nonblocking):
    out = own(comm.Get_rank()).copy()
    call = comm.Iscan if nonblocking else comm.Scan
    return out, call(place, out, op=SUM)


def exscan(comm, place, nonblocking):
    out = own(comm.Get_rank()).copy()
    call = comm.Iexscan if nonblocking else comm.Exscan
    result = call(place, out, op=SUM)
    if comm.Get_rank() == 0:
        out[:] = -1  # undefined on rank 0
    return out, result


def reduce_scatter_block(comm, place, nonblocking):
    out = own(comm.Get_rank(), SIZE * 2).copy()
    call = comm.Ireduce_scatter_block if nonblocking else comm.Reduce_scatter_block
    result = call(place, out, op=SUM)
    return out, result


def reduce_scatter(comm, place, nonblocking):
    out = own(comm.Get_rank(), SIZE * 2).copy()
    call = comm.Ireduce_scatter if nonblocking else comm.Reduce_scatter
    return out, call(place, out, [2] * SIZE, op=SUM)


CASES = [
    gather,
    gatherv,
    scatter,
    scatterv,
    allgather,
    allgatherv,
    alltoall,
    alltoallv,
    alltoallw,
    reduce,
    allreduce,
    scan,
    exscan,
    reduce_scatter_block,
    reduce_scatter,
]


def results(case, place, nonblocking):
    def body(comm):
        out, request = case(comm, place, nonblocking)
        if isinstance(request, Request):
            request.Wait()
        return None if out is None else out.tolist()

    return run_ranks(make_world(SIZE), body, timeout=30)


@pytest.mark.parametrize("nonblocking", [False, True], ids=["blocking", "nonblocking"])
@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
def test_none_gives_what_in_place_gives(case, nonblocking):
    in_place = results(case, IN_PLACE, nonblocking)
    assert results(case, None, nonblocking) == in_place
    assert any(row is not None for row in in_place)


def test_in_place_results_are_right():
    # One ground truth, so the comparison above is not between two wrong answers.
    assert results(allreduce, None, False) == [own(SIZE - 1).tolist()] * SIZE
    assert results(gather, None, False)[0] == [0, 1, 10, 11, 20, 21]
    assert results(scatter, None, False)[2] == table(2).tolist()


REJECTED = {
    "Bcast(None)": lambda c: c.Bcast(None, root=0),
    "Allgather recvbuf": lambda c: c.Allgather(own(0), None),
    "Alltoall recvbuf": lambda c: c.Alltoall(own(0), None),
    "Allreduce recvbuf": lambda c: c.Allreduce(own(0), None),
    "Iallreduce both": lambda c: c.Iallreduce(None, None),
    "Scan recvbuf": lambda c: c.Scan(None, None),
    "Reduce_scatter_block recvbuf": lambda c: c.Reduce_scatter_block(None, None),
    "Reduce_scatter recvbuf": lambda c: c.Reduce_scatter(None, None, [1] * SIZE),
    "Alltoallw recvbuf": lambda c: c.Alltoallw(None, None),
    # Root and non-roots each misuse a different argument: all of them raise.
    "Gather(None, None)": lambda c: c.Gather(None, None),
    "Igatherv(None, None)": lambda c: c.Igatherv(None, None, root=1),
    "Reduce(None, None)": lambda c: c.Reduce(None, None, root=2),
    "Scatter(None, None)": lambda c: c.Scatter(None, None),
    "Iscatterv(None, None)": lambda c: c.Iscatterv(None, None, root=1),
}


@pytest.mark.parametrize("name", list(REJECTED))
def test_none_where_it_is_not_a_message_raises_type_error_on_every_rank(name):
    call = REJECTED[name]

    def body(comm):
        try:
            call(comm)
        except TypeError as error:
            return str(error)
        comm.Barrier()  # a rank that accepted its arguments: where the others would block
        return None

    outcome = run_ranks(make_world(SIZE), body, timeout=30)
    raised = [message for message in outcome if message is not None]
    assert len(raised) == SIZE, outcome
    assert all("is None" in message for message in raised)
