"""Persistent collectives (MPI-4): set up once by ``X_init``, started many times.

Every operation, at 1 to 5 loopback ranks, gives after each start what its blocking form gives
on the same data (the data changes between starts: a start reads the buffers as they are then);
1,000 starts do no set-up (a profile of the starts contains none of the set-up functions, and
the work per start is constant); MPI's rules are enforced with clear errors; starts may come in
different orders on different ranks (a request is matched at init, by its own tag).
"""

from __future__ import annotations

import cProfile
import pstats
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ompy.MPI import (
    DOUBLE,
    ERR_COMM,
    ERR_OP,
    ERR_REQUEST,
    ERR_ROOT,
    IN_PLACE,
    INFO_NULL,
    MAX,
    PROD,
    SUM,
    Info,
    Op,
    Prequest,
)
from ompy.MPI import (
    Exception as MPIException,
)
from ompy.ompi.api.testing import make_world, run_ranks

sys.path.insert(0, str(Path(__file__).parent))
from persistent_neighbor_battery import run_persistent_neighbor_battery

from ompy.ompi.mca.coll.base import PlanBuilder, persistent
from ompy.ompi.mca.coll.base.persistent import TAGS, PersistentTags

SIZES = [1, 2, 3, 4, 5]


def fill(array, rank, start):
    """Data that differs per rank and per start (small integers: sums are exact)."""
    array[...] = (np.arange(array.size).reshape(array.shape) + 3 * rank + 7 * start) % 11 + 1


# -- every operation, checked against its blocking form ------------------------------------------


def every_operation(comm, starts=3, root=0):
    """Init each operation once, start it ``starts`` times with new data, compare with the
    blocking form on the same data every time.  Returns the operations checked."""
    rank, size = comm.Get_rank(), comm.Get_size()
    root = root % size
    n = 3
    counts = [(i % 3) + 1 for i in range(size)]
    displs = [sum(counts[:i]) for i in range(size)]
    cases = []  # (name, persistent request, inputs to refill, run blocking -> outputs)

    def case(name, request, inputs, outputs, blocking):
        expected = [np.empty_like(out) for out in outputs]
        cases.append((name, request, inputs, outputs, blocking, expected))

    s = np.zeros(n)
    r = np.zeros(n)
    case("allreduce", comm.Allreduce_init(s, r, SUM), [s], [r], lambda o: comm.Allreduce(s, o[0]))
    s2, r2 = np.zeros(n), np.zeros(n)
    case(
        "allreduce prod",
        comm.Allreduce_init(s2, r2, op=PROD),
        [s2],
        [r2],
        lambda o: comm.Allreduce(s2, o[0], PROD),
    )
    ip = np.zeros(n)
    case("allreduce in place", comm.Allreduce_init(IN_PLACE, ip, MAX), [ip], [ip], None)
    rs, rr = np.zeros(n), np.zeros(n)
    case(
        "reduce",
        comm.Reduce_init(rs, rr, SUM, root),
        [rs],
        [rr],
        lambda o: comm.Reduce(rs, o[0], SUM, root),
    )
    bb = np.zeros(n)
    case("bcast", comm.Bcast_init(bb, root), [bb] if rank == root else [], [bb], None)
    gs, gr = np.zeros(n), np.zeros(n * size)
    case(
        "gather", comm.Gather_init(gs, gr, root), [gs], [gr], lambda o: comm.Gather(gs, o[0], root)
    )
    vs, vr = np.zeros(counts[rank]), np.zeros(sum(counts))
    case(
        "gatherv",
        comm.Gatherv_init(vs, [vr, counts, displs, DOUBLE], root),
        [vs],
        [vr],
        lambda o: comm.Gatherv(vs, [o[0], counts, displs, DOUBLE], root),
    )
    ss, sr = np.zeros(n * size), np.zeros(n)
    case(
        "scatter",
        comm.Scatter_init(ss, sr, root),
        [ss],
        [sr],
        lambda o: comm.Scatter(ss, o[0], root),
    )
    svs, svr = np.zeros(sum(counts)), np.zeros(counts[rank])
    case(
        "scatterv",
        comm.Scatterv_init([svs, counts, displs, DOUBLE], svr, root),
        [svs],
        [svr],
        lambda o: comm.Scatterv([svs, counts, displs, DOUBLE], o[0], root),
    )
    ags, agr = np.zeros(n), np.zeros(n * size)
    case(
        "allgather",
        comm.Allgather_init(ags, agr),
        [ags],
        [agr],
        lambda o: comm.Allgather(ags, o[0]),
    )
    avs, avr = np.zeros(counts[rank]), np.zeros(sum(counts))
    case(
        "allgatherv",
        comm.Allgatherv_init(avs, [avr, counts, displs, DOUBLE]),
        [avs],
        [avr],
        lambda o: comm.Allgatherv(avs, [o[0], counts, displs, DOUBLE]),
    )
    ats, atr = np.zeros(n * size), np.zeros(n * size)
    case("alltoall", comm.Alltoall_init(ats, atr), [ats], [atr], lambda o: comm.Alltoall(ats, o[0]))
    aip = np.zeros(n * size)
    case("alltoall in place", comm.Alltoall_init(IN_PLACE, aip), [aip], [aip], None)
    scounts = [(rank + peer) % 2 + 1 for peer in range(size)]
    rcounts = [(peer + rank) % 2 + 1 for peer in range(size)]
    sd = [sum(scounts[:i]) for i in range(size)]
    rd = [sum(rcounts[:i]) for i in range(size)]
    vvs, vvr = np.zeros(sum(scounts)), np.zeros(sum(rcounts))
    case(
        "alltoallv",
        comm.Alltoallv_init([vvs, scounts, sd, DOUBLE], [vvr, rcounts, rd, DOUBLE]),
        [vvs],
        [vvr],
        lambda o: comm.Alltoallv([vvs, scounts, sd, DOUBLE], [o[0], rcounts, rd, DOUBLE]),
    )
    ws, wr = np.zeros(size * 2), np.zeros(size * 2)
    wdispl = [8 * 2 * i for i in range(size)]
    wmsg = ([2] * size, wdispl), [DOUBLE] * size
    case(
        "alltoallw",
        comm.Alltoallw_init([ws, *wmsg], [wr, *wmsg]),
        [ws],
        [wr],
        lambda o: comm.Alltoallw([ws, *wmsg], [o[0], *wmsg]),
    )
    rbs, rbr = np.zeros(n * size), np.zeros(n)
    case(
        "reduce_scatter_block",
        comm.Reduce_scatter_block_init(rbs, rbr, SUM),
        [rbs],
        [rbr],
        lambda o: comm.Reduce_scatter_block(rbs, o[0], SUM),
    )
    rvs, rvr = np.zeros(sum(counts)), np.zeros(counts[rank])
    case(
        "reduce_scatter",
        comm.Reduce_scatter_init(rvs, rvr, counts, SUM),
        [rvs],
        [rvr],
        lambda o: comm.Reduce_scatter(rvs, o[0], counts, SUM),
    )
    rvn, rvnr = np.zeros(sum(counts)), np.zeros(counts[rank])
    case(
        "reduce_scatter no counts",
        comm.Reduce_scatter_init(rvn, rvnr),
        [rvn],
        [rvnr],
        lambda o: comm.Reduce_scatter(rvn, o[0], counts, SUM),
    )
    scs, scr = np.zeros(n), np.zeros(n)
    case("scan", comm.Scan_init(scs, scr, SUM), [scs], [scr], lambda o: comm.Scan(scs, o[0]))
    exs, exr = np.zeros(n), np.full(n, -5.0)
    case("exscan", comm.Exscan_init(exs, exr, SUM), [exs], [exr], lambda o: comm.Exscan(exs, o[0]))
    barrier = comm.Barrier_init()

    for start in range(starts):
        for name, request, inputs, outputs, blocking, expected in cases:
            for array in inputs:
                fill(array, rank, start)
            if blocking is not None:
                for out, want in zip(outputs, expected, strict=True):
                    want[...] = out
                blocking(expected)
            elif name == "bcast":
                expected[0][...] = (np.arange(n) + 3 * root + 7 * start) % 11 + 1
            elif name == "allreduce in place":
                contributions = []
                for peer in range(size):
                    mine = np.empty(n)
                    fill(mine, peer, start)
                    contributions.append(mine)
                expected[0][...] = np.max(contributions, axis=0)
            elif name == "alltoall in place":
                for peer in range(size):
                    theirs = np.empty(n * size)
                    fill(theirs, peer, start)
                    expected[0][peer * n : (peer + 1) * n] = theirs[rank * n : (rank + 1) * n]
            request.Start()
            request.Wait()
            for out, want in zip(outputs, expected, strict=True):
                if name == "reduce" and rank != root:
                    continue
                assert np.array_equal(out, want), (name, rank, size, start, out, want)
        barrier.Start()
        barrier.Wait()
    for _name, request, *_ in cases:
        request.Free()
        assert not request
    barrier.Free()
    return sorted(name for name, *_ in cases)


@pytest.mark.parametrize("size", SIZES)
def test_every_persistent_collective_matches_its_blocking_form_start_after_start(size):
    results = run_ranks(make_world(size), every_operation, timeout=120)
    assert results[0] == results[-1]
    assert len(results[0]) == 20


@pytest.mark.parametrize("root", [1, 2, 4])
def test_rooted_persistent_collectives_take_any_root(root):
    results = run_ranks(make_world(5), lambda comm: every_operation(comm, 2, root), timeout=120)
    assert len(results[0]) == 20


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    size=st.integers(1, 5),
    count=st.integers(0, 40),
    starts=st.integers(1, 4),
    commutative=st.booleans(),
)
def test_a_persistent_allreduce_of_any_shape_reduces_in_rank_order(
    size, count, starts, commutative
):
    """A non-commutative op sees the contributions in rank order, start after start."""

    def body(comm):
        # 2x2 matrix products (non-commutative) or sums, on count matrices.
        def matmul(inbuf, inoutbuf, datatype):
            a = np.frombuffer(inbuf, dtype=np.float64).reshape(-1, 2, 2)
            b = np.frombuffer(inoutbuf, dtype=np.float64).reshape(-1, 2, 2)
            b[...] = a @ b

        op = Op.Create(matmul, commute=commutative)
        flat_mine, flat_result = np.zeros(4 * count), np.zeros(4 * count)
        mine, result = flat_mine.reshape(count, 2, 2), flat_result.reshape(count, 2, 2)
        request = comm.Allreduce_init(flat_mine, flat_result, op)
        rank, size = comm.Get_rank(), comm.Get_size()
        for start in range(starts):
            mine[...] = [[1, rank + start], [0, 1]] if rank % 2 else [[1, 0], [rank + 1, 1]]
            request.Start()
            request.Wait()
            expected = np.broadcast_to(np.eye(2), (count, 2, 2)).copy()
            for peer in range(size):
                block = [[1, peer + start], [0, 1]] if peer % 2 else [[1, 0], [peer + 1, 1]]
                expected = expected @ np.array(block, dtype=np.float64)
            assert np.array_equal(result, expected)
        request.Free()
        op.Free()
        return True

    assert all(run_ranks(make_world(size), body, timeout=60))


# -- no set-up per start -------------------------------------------------------------------------

#: Functions that belong to setting a collective up (file, function): none may run during the
#: starts.  (The reduction kernel itself, ``kernels.py:kernel``, is the data work of a start.)
SETUP = {
    ("persistent.py", "plan_collective"),
    ("persistent.py", "build"),
    ("persistent.py", "claim"),
    ("persistent.py", "scratch"),
    ("persistent.py", "_tree_reduce"),
    ("persistent.py", "_binomial_bcast"),
    ("persistent.py", "allreduce"),
    ("persistent_collectives.py", "_initialize"),
    ("persistent_collectives.py", "Allreduce_init"),
    ("select.py", "kernel"),
    ("buffer.py", "parse_buffer"),
    ("buffer.py", "export_buffer"),
    ("helpers.py", "binomial_children"),
    ("helpers.py", "binomial_parent"),
    ("collective.py", "_everyone_args"),
    ("staging.py", "__init__"),
    ("tags.py", "next_tag"),
    ("tags.py", "claim_tag"),
}


#: Functions that only the waiting of longer runs may reach (progress polls more or less).
WAITING = {
    ("progress.py", "wait_until"),
    ("progress.py", "progress"),
    ("{built-in method time.sleep}", "<built-in method time.sleep>"),
}


def profile_starts(request, times):
    """The profile of ``times`` starts and waits of ``request``: {(file, function): calls}."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(times):
        request.Start()
        request.Wait()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    return {(Path(file).name, name): row[1] for (file, _line, name), row in stats.items()}


@pytest.mark.parametrize("size", [2, 3])
def test_a_thousand_starts_reuse_the_schedule_built_at_init(size):
    def body(comm):
        mine, result = np.zeros(4), np.zeros(4)
        request = comm.Allreduce_init(mine, result, SUM)
        planned = request._starter.__closure__  # the persistent collective behind the request
        collective = next(
            cell.cell_contents
            for cell in planned
            if isinstance(cell.cell_contents, persistent.PlanCollective)
        )
        plan = collective.plan
        first = profile_starts(request, 100)
        mine[...] = comm.Get_rank() + 1
        thousand = profile_starts(request, 1000)
        assert np.all(result == size * (size + 1) / 2)
        assert collective.starts == 1100
        assert collective.plan is plan  # the very plan built at init
        ran_setup = sorted(SETUP & (set(first) | set(thousand)))
        assert not ran_setup, f"set-up functions ran during the starts: {ran_setup}"
        # The work of a start does not grow: every function is called as often per start.
        # (Waiting polls a varying number of times; the plan's own steps do not vary.)
        for step in (("persistent.py", "start"), ("persistent.py", "__init__")):
            assert first[step] == 100
            assert thousand[step] == 1000
        assert set(thousand) <= set(first) | WAITING
        request.Free()
        return True

    assert all(run_ranks(make_world(size), body, timeout=120))


# -- MPI's rules, with clear errors --------------------------------------------------------------


def test_starting_an_active_request_and_freeing_it_are_refused_and_leave_it_usable():
    def body(comm):
        buf = np.zeros(2)
        request = comm.Allreduce_init(IN_PLACE, buf)
        assert isinstance(request, Prequest)
        assert request.Test()  # an inactive request tests complete
        buf[:] = 1
        request.Start()
        with pytest.raises(MPIException) as active:
            request.Start()
        assert active.value.Get_error_class() == ERR_REQUEST
        assert "active" in str(active.value)
        with pytest.raises(MPIException) as freeing:
            request.Free()
        assert freeing.value.Get_error_class() == ERR_REQUEST
        assert "active" in str(freeing.value)
        request.Wait()
        assert np.all(buf == comm.Get_size())
        request.Free()
        with pytest.raises(MPIException) as null:
            request.Start()
        assert null.value.Get_error_class() == ERR_REQUEST
        return True

    assert all(run_ranks(make_world(2), body, timeout=30))


def test_bad_arguments_fail_at_init_with_mpi_errors():
    def body(comm):
        size = comm.Get_size()
        a, b = np.zeros(3), np.zeros(3)
        with pytest.raises(MPIException) as root:
            comm.Bcast_init(a, root=size)
        assert root.value.Get_error_class() == ERR_ROOT
        with pytest.raises(MPIException) as reduce_root:
            comm.Reduce_init(a, b, SUM, -1)
        assert reduce_root.value.Get_error_class() == ERR_ROOT
        with pytest.raises(ValueError, match="mismatch"):
            comm.Allreduce_init(a, np.zeros(4))
        with pytest.raises(TypeError, match="info must be an Info"):
            comm.Barrier_init(info="fast")
        with pytest.raises(ValueError, match="receive counts"):
            comm.Reduce_scatter_init(np.zeros(3 * size), np.zeros(3), [3])
        with pytest.raises(MPIException) as op:
            comm.Allreduce_init(np.zeros(3, dtype=np.complex128), np.zeros(3, np.complex128), MAX)
        assert op.value.Get_error_class() == ERR_OP
        # After refusals the tags of every rank still agree: a good init works.
        info = Info.Create()
        request = comm.Allreduce_init(a, b, SUM, info=info)
        info.Free()
        a[:] = 2
        request.Start()
        request.Wait()
        assert np.all(b == 2 * size)
        request.Free()
        return True

    assert all(run_ranks(make_world(3), body, timeout=30))


def test_an_init_refused_on_one_member_only_keeps_the_members_tags_in_step():
    """The root's receive buffer is not size blocks: only the root raises; the next inits match."""

    def body(comm):
        rank, size = comm.Get_rank(), comm.Get_size()
        if rank == 0:
            with pytest.raises(ValueError, match="multiple"):
                comm.Gather_init(np.zeros(2), np.zeros(2 * size - 1), root=0)
        else:
            comm.Gather_init(np.zeros(2), None, root=0).Free()  # never started
        mine, total = np.full(3, rank + 1.0), np.zeros(3)
        request = comm.Allreduce_init(mine, total)
        request.Start()
        request.Wait()
        request.Free()
        return total.tolist()

    expected = [[6.0] * 3] * 3
    assert run_ranks(make_world(3), body, timeout=30) == expected


def test_starting_on_a_freed_communicator_is_refused():
    def body(comm):
        dup = comm.Dup()
        request = dup.Barrier_init(INFO_NULL)
        dup.Free()
        with pytest.raises(MPIException) as freed:
            request.Start()
        assert freed.value.Get_error_class() == ERR_COMM
        request.Free()
        return True

    assert all(run_ranks(make_world(2), body, timeout=30))


# -- ordering --------------------------------------------------------------------------------------


def test_starts_may_come_in_any_order_and_mix_with_other_collectives():
    """Matched at init: rank r starts the requests in its own order, Startall included."""

    def body(comm):
        rank, size = comm.Get_rank(), comm.Get_size()
        buffers = [np.zeros(5) for _ in range(4)]
        results = [np.zeros(5) for _ in range(4)]
        requests = [comm.Allreduce_init(buffers[i], results[i], SUM) for i in range(4)]
        bcast = np.zeros(5)
        requests.append(comm.Bcast_init(bcast, root=size - 1))
        for round_ in range(20):
            for i, buffer in enumerate(buffers):
                buffer[:] = 100 * i + rank + round_
            if rank == size - 1:
                bcast[:] = round_
            order = list(range(len(requests)))
            np.random.default_rng(rank * 1000 + round_).shuffle(order)
            if round_ % 2:
                Prequest.Startall([requests[i] for i in order])
            else:
                for i in order:
                    requests[i].Start()
            # an ordinary collective while they are in flight
            assert comm.allreduce(rank) == size * (size - 1) // 2
            other = np.zeros(1)
            comm.Iallreduce(np.ones(1), other).Wait()
            Prequest.Waitall(requests)
            for i, result in enumerate(results):
                assert np.all(result == sum(100 * i + r + round_ for r in range(size)))
            assert np.all(bcast == round_)
        for request in requests:
            request.Free()
        return True

    assert all(run_ranks(make_world(4), body, timeout=60))


def test_derived_datatypes_are_refilled_and_unpacked_at_every_start():
    def body(comm):
        rank, size = comm.Get_rank(), comm.Get_size()
        column = DOUBLE.Create_vector(4, 1, 3).Commit()
        matrix = np.zeros((4, 3))
        request = comm.Bcast_init([matrix, 1, column], root=0)
        gathered = np.zeros((4, 3 * size))
        everyone = DOUBLE.Create_vector(4, 1, 3 * size).Commit()
        resized = everyone.Create_resized(0, 8).Commit()
        mine = np.zeros(4)
        gather = comm.Allgather_init(mine, [gathered, 1, resized])
        reduce_in = np.zeros((4, 3))
        reduce_out = np.zeros((4, 3))
        allreduce = comm.Allreduce_init([reduce_in, 1, column], [reduce_out, 1, column], SUM)
        for start in range(3):
            matrix[...] = -1
            if rank == 0:
                matrix[:, 0] = np.arange(4) + start
            mine[:] = rank * 10 + start + np.arange(4)
            reduce_in[...] = 0
            reduce_in[:, 0] = rank + start
            Prequest.Startall([request, gather, allreduce])
            Prequest.Waitall([request, gather, allreduce])
            assert np.array_equal(matrix[:, 0], np.arange(4) + start)
            for peer in range(size):
                assert np.array_equal(gathered[:, peer], peer * 10 + start + np.arange(4))
            assert np.all(reduce_out[:, 0] == sum(r + start for r in range(size)))
            assert np.all(reduce_out[:, 1:] == 0)
        for handle in (request, gather, allreduce):
            handle.Free()
        for datatype in (column, everyone, resized):
            datatype.Free()
        return True

    assert all(run_ranks(make_world(3), body, timeout=60))


# -- the plan and its tags -------------------------------------------------------------------------


def test_a_plan_refuses_a_local_step_racing_its_transfers():
    (world,) = make_world(1)
    builder = PlanBuilder(world._c, -(1 << 18))
    view = builder.scratch(8)
    builder.send(view, 0)
    with pytest.raises(RuntimeError, match="wait"):
        builder.copy(builder.scratch(8), view)
    builder.wait()
    builder.copy(builder.scratch(8), view)
    plan = builder.build()
    assert plan.transfers == 1
    assert len(plan.phases) == 1
    assert len(plan.final) == 1


def test_persistent_tags_are_reused_only_once_their_request_is_freed():
    tags = PersistentTags()
    first = tags.claim("comm")
    second = tags.claim("comm")
    assert first != second
    assert first == persistent.FIRST_TAG
    tags.sequence = TAGS  # the next claim comes back to the first tag, still in use
    with pytest.raises(MPIException, match="alive at once"):
        tags.claim("comm")
    tags.release(first)
    tags.sequence = TAGS
    assert tags.claim("comm") == first


def test_persistent_tags_stay_out_of_every_other_range_of_library_tags():
    from ompy.ompi.api import tags as api_tags
    from ompy.ompi.mca.coll.base import tags as coll_tags

    lowest = persistent.FIRST_TAG - TAGS + 1
    assert persistent.FIRST_TAG < coll_tags.LAST_TAG
    assert persistent.FIRST_TAG < api_tags.TAG_SCATTER
    assert lowest > api_tags.PICKLE_CHANNEL_BASE


# -- neighbor collectives ------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
def test_persistent_neighbor_collectives_match_their_blocking_forms_on_every_topology(size):
    from ompy import MPI

    results = run_ranks(
        make_world(size), lambda comm: run_persistent_neighbor_battery(MPI, comm), timeout=120
    )
    for passed in results:
        assert "halo Neighbor_alltoallw_init" in passed
        for topology in ("cart 1-d periodic", "cart 2-d", "graph ring", "dist graph"):
            for operation in ("allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"):
                assert f"{topology} {operation}" in passed


def test_bad_neighbor_arguments_fail_at_init():
    def body(comm):
        ring = comm.Create_cart([comm.Get_size()], [True])
        with pytest.raises(ValueError, match="multiple"):
            ring.Neighbor_alltoall_init(np.zeros(4), np.zeros(5))  # 2 blocks each way
        with pytest.raises(TypeError, match="info must be an Info"):
            ring.Neighbor_allgather_init(np.zeros(1), np.zeros(2), info=0)
        request = ring.Neighbor_allgather_init(np.ones(1), np.zeros(2))
        request.Start()
        with pytest.raises(MPIException) as active:
            request.Free()
        assert active.value.Get_error_class() == ERR_REQUEST
        request.Wait()
        request.Free()
        ring.Free()
        return True

    assert all(run_ranks(make_world(3), body, timeout=30))
