"""MPI_THREAD_MULTIPLE on loopback worlds: the locked variants, and agreements run side by side.

Each loopback rank runs in its own thread (``run_ranks``), and here each rank starts threads of
its own, as a THREAD_MULTIPLE program does.  The multi-process tests over the real transports
are in ``integration/threads``.
"""

from __future__ import annotations

import _thread
import threading
import time

import numpy as np
import pytest

from ompy.ompi import threads as thread_support
from ompy.ompi.api import init
from ompy.ompi.api.comm import Intracomm
from ompy.ompi.api.session import session_on
from ompy.ompi.api.testing import default_instance, make_world, run_ranks
from ompy.ompi.constants import (
    ANY_SOURCE,
    THREAD_FUNNELED,
    THREAD_MULTIPLE,
    THREAD_SERIALIZED,
    THREAD_SINGLE,
    UNDEFINED,
)
from ompy.ompi.errors import Exception as MPIException
from ompy.opal.threads import InternalThread


def in_threads(count: int, body) -> list:
    """``body(t)`` in ``count`` threads of this rank; their results, or the first error."""
    results: list = [None] * count
    errors: list = []

    def run(t: int) -> None:
        try:
            results[t] = body(t)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(t,), daemon=True) for t in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive(), "a thread hung"
    if errors:
        raise errors[0]
    return results


def multiple(worlds: list[Intracomm]) -> list[Intracomm]:
    for world in worlds:
        thread_support.provide(world._c.instance, THREAD_MULTIPLE)
    return worlds


def test_only_thread_multiple_switches_to_the_locked_variants_and_only_once():
    (world,) = make_world(1)
    instance = world._c.instance
    pml, engine = instance.pml, instance.engine
    for level in (THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED):
        assert thread_support.provide(instance, level) == level
        assert not engine.threaded and "irecv" not in vars(pml)  # the class's own methods
    assert thread_support.provide(instance, THREAD_MULTIPLE) == THREAD_MULTIPLE
    assert not engine.threaded  # granted, but no second thread yet (lazy activation, below)
    instance.go_threaded()
    assert engine.threaded
    locked = {name: vars(pml)[name] for name in ("isend", "irecv", "iprobe", "add_comm")}
    assert all(method.__wrapped__.__self__ is pml for method in locked.values())
    assert thread_support.provide(instance, THREAD_SINGLE) == THREAD_MULTIPLE  # never lowered
    assert thread_support.provide(instance, THREAD_MULTIPLE) == THREAD_MULTIPLE
    instance.go_threaded()
    assert {name: vars(pml)[name] for name in locked} == locked  # not wrapped twice
    out = np.zeros(2)
    request = world.Irecv(out, 0, 4)  # a communicator made before the switch uses them too
    world.Send(np.array([1.0, 2.0]), 0, 4)
    request.Wait()
    assert out.tolist() == [1.0, 2.0] and world.sendrecv("x", 0, source=0) == "x"


def test_query_thread_and_is_thread_main_answer_for_the_instance():
    with default_instance() as instance:
        thread_support.provide(instance, THREAD_MULTIPLE)
        assert init.Query_thread() == THREAD_MULTIPLE
        assert init.Is_thread_main()
        seen = in_threads(2, lambda t: init.Is_thread_main())
        assert seen == [False, False]
    assert init.MAX_THREAD_LEVEL == THREAD_MULTIPLE


def test_threads_sharing_a_communicator_get_every_message_once_and_in_order():
    threads, messages = 3, 40

    def body(world):
        rank, size = world.rank, world.size
        peers = [r for r in range(size) if r != rank]

        def work(t: int):
            if t < threads:  # senders: buffers on tag t, objects on 10 + t
                for i in range(messages):
                    for peer in peers:
                        world.Send(np.array([rank, i], dtype=np.int64), peer, t)
                        world.send((rank, i), peer, 10 + t)
                return None
            t -= threads
            got: dict[tuple[int, str], list[int]] = {}
            buf = np.zeros(2, dtype=np.int64)
            for _ in range(messages * len(peers)):
                world.Recv(buf, ANY_SOURCE, t)
                got.setdefault((int(buf[0]), "buffer"), []).append(int(buf[1]))
                source, i = world.recv(source=ANY_SOURCE, tag=10 + t)
                got.setdefault((source, "object"), []).append(i)
            return got

        results = in_threads(2 * threads, work)
        return results[threads:]

    for rank, per_thread in enumerate(run_ranks(multiple(make_world(3)), body, timeout=120)):
        peers = [peer for peer in range(3) if peer != rank]
        for got in per_thread:  # from each peer, each kind: every message once, in order
            expected = {(peer, kind) for peer in peers for kind in ("buffer", "object")}
            assert set(got) == expected
            assert all(received == list(range(messages)) for received in got.values())


def test_concurrent_dups_and_parentless_creations_agree_on_distinct_context_ids():
    threads, rounds = 3, 4

    def body(world):
        bases = [world.Dup() for _ in range(threads)]
        session = session_on(world._c.instance)
        all_made = threading.Barrier(threads + 1)

        def work(t: int) -> list[int]:
            made = []
            for r in range(rounds):
                if t == threads:  # one thread creates communicators without a parent
                    comm = Intracomm.Create_from_group(
                        session.Create_group("mpi://WORLD"), f"threads {r}"
                    )
                else:
                    comm = bases[t].Dup()
                assert comm.allreduce(1) == world.size
                made.append(comm)
            cids = [comm._c.context_id for comm in made]
            all_made.wait(60)  # every communicator of every thread is alive here
            for comm in made:
                comm.Free()
            return cids

        cids = in_threads(threads + 1, work)
        session.Finalize()
        return cids

    per_rank = run_ranks(multiple(make_world(3)), body, timeout=120)
    assert per_rank[0] == per_rank[1] == per_rank[2]  # every member took the same ids
    every = [cid for thread in per_rank[0] for cid in thread]
    assert len(every) == len(set(every))  # and no two live communicators shared one


@pytest.mark.parametrize("level", [THREAD_SINGLE, THREAD_MULTIPLE])
def test_a_split_that_leaves_a_member_out_gives_its_agreed_id_back(level):
    def body(world):
        thread_support.provide(world._c.instance, level)
        before = set(world._c.instance.cids)
        part = world.Split(0 if world.rank else UNDEFINED)
        after = set(world._c.instance.cids)
        if part:
            part.Free()
        return after - before

    added = run_ranks(make_world(2), body)
    assert added[0] == set() and len(added[1]) == 1


def test_a_send_to_this_process_wakes_the_thread_sleeping_in_its_receive():
    (world,) = multiple(make_world(1))
    engine = world._c.instance.engine
    engine.block_max = 5.0  # a missed wake-up would show as a sleep of seconds
    woke: list[float] = []

    def receive(t: int) -> None:
        buf = np.zeros(1)
        world.Recv(buf, 0, t)
        woke.append(time.monotonic())

    receivers = [threading.Thread(target=receive, args=(t,)) for t in range(3)]
    for thread in receivers:
        thread.start()
    time.sleep(2.0)  # all asleep (one on the descriptors, two on the condition), for ~1 s or more
    sent = time.monotonic()
    for t in range(3):
        world.Send(np.ones(1), 0, t)
    for thread in receivers:
        thread.join(10)
    assert len(woke) == 3 and max(woke) - sent < 0.5, [w - sent for w in woke]


# -- lazy activation: MULTIPLE is granted at once, the locks come with the second thread ---------


def is_locked(instance) -> bool:
    """Whether ``instance`` runs its locked variants (engine and PML entry points)."""
    locked_pml = all(name in vars(instance.pml) for name in ("isend", "irecv", "iprobe"))
    assert locked_pml == instance.engine.threaded  # the two switch together
    return locked_pml


def traffic(world: Intracomm) -> None:
    """A little of everything on a 1-rank world: buffers, objects, nonblocking, collectives."""
    out = np.zeros(2)
    request = world.Irecv(out, 0, 1)
    world.Send(np.array([1.0, 2.0]), 0, 1)
    request.Wait()
    assert out.tolist() == [1.0, 2.0]
    assert world.sendrecv({"x": 1}, 0, source=0) == {"x": 1}
    assert world.allreduce(3) == 3
    world.Iallreduce(np.ones(1), out[:1]).Wait()
    assert out[0] == 1.0
    assert world.Iprobe(0, 7) is False
    world.Dup().Free()


def test_multiple_without_a_second_thread_keeps_the_unlocked_paths():
    assert not thread_support.program_threads()  # this test runs with no other thread
    (world,) = make_world(1)
    instance = world._c.instance
    assert thread_support.provide(instance, THREAD_MULTIPLE) == THREAD_MULTIPLE
    assert instance.thread_level == THREAD_MULTIPLE  # what Query_thread answers
    assert not is_locked(instance)
    assert instance.engine.progress == instance.engine._progress
    traffic(world)
    assert not is_locked(instance)


def test_starting_a_thread_switches_before_it_runs():
    assert not thread_support.program_threads()
    worlds = [make_world(1)[0] for _ in range(2)]  # two instances: both switch
    instances = [world._c.instance for world in worlds]
    for instance in instances:
        thread_support.provide(instance, THREAD_MULTIPLE)
    single = make_world(1)[0]._c.instance  # not granted MULTIPLE: stays unlocked
    thread_support.provide(single, THREAD_SERIALIZED)
    seen: list = []

    def first_thing() -> None:  # the new thread's first MPI call finds the locked mode
        seen.append([is_locked(instance) for instance in instances])
        seen.append(worlds[0].sendrecv("from the thread", 0, source=0))

    thread = threading.Thread(target=first_thing)
    assert not any(is_locked(instance) for instance in instances)
    thread.start()
    assert all(is_locked(instance) for instance in instances)  # switched by start() itself
    thread.join(30)
    assert seen == [[True, True], "from the thread"]
    assert not is_locked(single)
    traffic(worlds[1])  # and both work as before
    in_threads(2, lambda t: traffic(worlds[t]))


def test_executors_start_their_threads_through_the_same_hook():
    from concurrent.futures import ThreadPoolExecutor

    (world,) = make_world(1)
    instance = world._c.instance
    thread_support.provide(instance, THREAD_MULTIPLE)
    if thread_support.program_threads():  # an earlier test's pool may still be winding down
        pytest.skip("another thread is alive: provide switched at once")
    assert not is_locked(instance)
    with ThreadPoolExecutor(2) as pool:
        assert pool.submit(lambda: (is_locked(instance), world.sendrecv(5, 0, source=0))).result(
            30
        ) == (True, 5)


def test_threads_that_exist_before_provide_switch_it_at_once():
    release = threading.Event()
    waiting = threading.Thread(target=release.wait, args=(30,))
    waiting.start()
    try:
        (world,) = make_world(1)
        instance = world._c.instance
        thread_support.provide(instance, THREAD_MULTIPLE)
        assert is_locked(instance)  # the thread may call MPI as soon as provide returns
    finally:
        release.set()
        waiting.join(30)


def test_ompys_own_threads_neither_count_nor_switch():
    release = threading.Event()
    helper = InternalThread(target=release.wait, args=(30,))
    helper.start()  # exists before provide: does not count
    try:
        (world,) = make_world(1)
        instance = world._c.instance
        thread_support.provide(instance, THREAD_MULTIPLE)
        assert thread_support.program_threads() == []
        assert not is_locked(instance)
        another = InternalThread(target=release.wait, args=(30,))
        another.start()  # started after it: no switch either
        assert not is_locked(instance)
        release.set()
        another.join(30)
        traffic(world)
        assert not is_locked(instance)
    finally:
        release.set()
        helper.join(30)


def test_activate_switches_for_threads_the_hook_cannot_see():
    assert not thread_support.program_threads()
    (world,) = make_world(1)
    instance = world._c.instance
    thread_support.provide(instance, THREAD_MULTIPLE)
    done = threading.Event()
    _thread.start_new_thread(done.set, ())  # bypasses threading.Thread.start: no switch
    assert done.wait(30)
    assert not is_locked(instance)
    thread_support.activate()
    assert is_locked(instance)


def test_a_thread_started_by_an_error_handler_leaves_the_failing_call_consistent():
    # A user callback inside an MPI call starts the second thread: the call ends as it would
    # have, and the thread (which calls MPI at once) finds the locked mode.
    (world,) = make_world(1)
    instance = world._c.instance
    thread_support.provide(instance, THREAD_MULTIPLE)
    started: list[threading.Thread] = []
    got: list = []

    def handler(comm, code) -> None:
        thread = threading.Thread(target=lambda: got.append(world.sendrecv("t", 0, source=0)))
        thread.start()
        started.append(thread)

    world.Set_errhandler(world.Create_errhandler(handler))
    with pytest.raises(MPIException):  # rank 5 does not exist: the handler runs, then this
        world.Send(np.ones(1), 5, 0)
    assert is_locked(instance)
    started[0].join(30)
    assert got == ["t"] and world.sendrecv("after", 0, source=0) == "after"
