"""MPI_THREAD_MULTIPLE under load, run by every rank of a job (sm or tcp, chosen by the test).

Each rank prints one JSON line: its rank, the thread level, and for every step the problems it
found (an empty list is a pass).  Steps, in this order on every rank:

1. ``Init_thread(THREAD_MULTIPLE)`` provides it; ``Query_thread`` says so; ``Is_thread_main``
   is true in the main thread only.
2. Shared communicator: THREADS sender threads and THREADS receiver threads per rank on
   ``COMM_WORLD``.  Sender ``t`` sends MESSAGES messages to every other rank on tag ``t``
   (buffers, ``Send``), ``100 + t`` (pickled, ``send``) and ``200 + t`` (buffers, some of them
   long enough for the rendezvous protocol); receiver ``t`` takes them with ``ANY_SOURCE`` on
   the first two tags and with each specific source in turn on the third.  Every message must
   arrive exactly once, intact, and in order per (source, tag).
3. Private communicators: the main thread makes one ``Dup`` per thread; then every thread, at
   once, ``Dup``s and ``Split``s its own (concurrent context-id agreements), exchanges
   nonblocking messages on it with every peer (``Isend``/``Irecv``/``isend``/``irecv``,
   finished by ``Waitall``), and runs collectives on it (``Barrier``, ``bcast``,
   ``allreduce``, ``Allreduce``, ``allgather``).
4. ``COMM_WORLD.Barrier`` and ``Finalize`` from the main thread.

The threads are started after ``Init_thread`` (the process switches to its locked mode when it
starts the first, lazy activation: ``locked_at_init`` is false), or, with
``--threads-before-init``, all of them before it: they wait for their work in a pool, and
``Init_thread`` switches at once (``locked_at_init`` is true).
"""

from __future__ import annotations

import json
import queue
import sys
import threading

import numpy as np

from ompy.ompi.api import rc

rc.initialize = False
from ompy import MPI  # noqa: E402

THREADS = 4
MESSAGES = 200
LONG = 100_000  # int64 elements: 800 kB, above every transport's eager limit
TIMEOUT = 120.0


class Pool:
    """Threads started once, before ``Init_thread`` (``--threads-before-init``), that run the
    work ``run_threads`` gives them, one piece each."""

    def __init__(self, count: int) -> None:
        self.jobs: list[queue.Queue] = [queue.Queue() for _ in range(count)]
        for jobs in self.jobs:
            threading.Thread(target=self._serve, args=(jobs,), daemon=True).start()

    @staticmethod
    def _serve(jobs: queue.Queue) -> None:
        while True:
            job, done = jobs.get()
            try:
                job()
            finally:
                done.set()

    def run(self, jobs: list) -> list[bool]:
        """Run ``jobs[i]`` in thread ``i``; whether each finished in time."""
        events = [threading.Event() for _ in jobs]
        for queue_, job, done in zip(self.jobs, jobs, events, strict=False):
            queue_.put((job, done))
        return [done.wait(TIMEOUT) for done in events]


POOL: Pool | None = None  # set by main() with --threads-before-init


def run_threads(target, count: int) -> list[str]:
    """Run ``target(t, problems)`` in ``count`` threads; the problems they found."""
    problems: list[str] = []

    def guarded(t: int) -> None:
        try:
            target(t, problems)
        except BaseException as error:  # reported, not lost in a thread
            problems.append(f"thread {t}: {error!r}")

    if POOL is not None:
        finished = POOL.run([lambda t=t: guarded(t) for t in range(count)])
        problems += [
            f"pool thread {t} still runs after {TIMEOUT} s" for t in range(count) if not finished[t]
        ]
        return problems
    threads = [threading.Thread(target=guarded, args=(t,), daemon=True) for t in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
        if thread.is_alive():
            problems.append(f"{thread.name} still runs after {TIMEOUT} s (a hang)")
    return problems


def levels() -> list[str]:
    problems = []
    provided = MPI.Init_thread(MPI.THREAD_MULTIPLE)
    if provided != MPI.THREAD_MULTIPLE:
        problems.append(f"Init_thread provided {provided}")
    if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
        problems.append(f"Query_thread says {MPI.Query_thread()}")
    if not MPI.Is_thread_main():
        problems.append("Is_thread_main is false in the main thread")
    locked = MPI.COMM_WORLD._c.instance.engine.threaded  # ompy's own state, not MPI's
    if locked != (POOL is not None):
        problems.append(f"locked right after Init_thread: {locked}, threads exist: {POOL}")
    seen: list[bool] = []
    problems += run_threads(lambda t, _: seen.append(MPI.Is_thread_main()), 1)
    if not MPI.COMM_WORLD._c.instance.engine.threaded:
        problems.append("not locked after a thread was started")
    if seen != [False]:
        problems.append(f"Is_thread_main in another thread: {seen}")
    return problems


def payload(source: int, tag: int, i: int, long: bool = False) -> np.ndarray:
    size = LONG if long else 3
    data = np.full(size, i, dtype=np.int64)
    data[0], data[1] = source, tag
    return data


def shared(comm: MPI.Intracomm) -> list[str]:
    rank, size = comm.Get_rank(), comm.Get_size()
    peers = [r for r in range(size) if r != rank]

    def send(t: int, problems: list[str]) -> None:
        for i in range(MESSAGES):
            for peer in peers:
                comm.Send(payload(rank, t, i), peer, t)
                comm.send((rank, t, i, "x" * (i % 7)), peer, 100 + t)
        for i in range(MESSAGES):  # the receiver takes these after the others
            for peer in peers:
                comm.Send(payload(rank, 200 + t, i, long=i % 20 == 0), peer, 200 + t)

    def receive(t: int, problems: list[str]) -> None:
        nexts = {(peer, tag): 0 for peer in peers for tag in (t, 100 + t, 200 + t)}
        status = MPI.Status()
        short = np.zeros(3, dtype=np.int64)
        long = np.zeros(LONG, dtype=np.int64)
        for _ in range(MESSAGES * len(peers)):
            comm.Recv(short, MPI.ANY_SOURCE, t, status)
            check(problems, nexts, status.Get_source(), t, [int(x) for x in short])
            obj = comm.recv(None, MPI.ANY_SOURCE, 100 + t, status)
            check(problems, nexts, status.Get_source(), 100 + t, list(obj[:3]))
        for i in range(MESSAGES):
            for peer in peers:
                buf = long if i % 20 == 0 else short
                comm.Recv(buf, peer, 200 + t, status)
                if status.Get_count(MPI.INT64_T) != len(buf):
                    problems.append(f"tag {200 + t} from {peer}: {status.Get_count()} elements")
                check(problems, nexts, peer, 200 + t, [int(x) for x in buf[:3]])
                if i % 20 == 0 and not (buf[2:] == i).all():
                    problems.append(f"long message {i} from {peer} is corrupt")
        for (peer, tag), count in nexts.items():
            if count != MESSAGES:
                problems.append(f"tag {tag} from {peer}: {count} of {MESSAGES} messages")

    def both(t: int, problems: list[str]) -> None:
        (send if t < THREADS else receive)(t % THREADS, problems)

    return run_threads(both, 2 * THREADS)


def check(problems: list[str], nexts: dict, source: int, tag: int, got: list) -> None:
    """A message (source, tag, i) must be the next one expected from that source on that tag."""
    expected = nexts.get((source, tag))
    if expected is None or got[:2] != [source, tag % 100 if tag < 200 else tag]:
        problems.append(f"tag {tag}: unexpected message {got} from {source}")
        return
    if got[2] != expected:
        problems.append(f"tag {tag} from {source}: message {got[2]}, expected {expected}")
    nexts[(source, tag)] = got[2] + 1


def private(world: MPI.Intracomm) -> list[str]:
    bases = [world.Dup() for _ in range(THREADS)]
    rank, size = world.Get_rank(), world.Get_size()

    def work(t: int, problems: list[str]) -> None:
        comm = bases[t].Dup()
        halves = comm.Split(rank % 2, -rank)
        if halves.Get_size() != len(range(rank % 2, size, 2)) or halves.Get_rank() != (
            len(range(rank % 2, size, 2)) - 1 - rank // 2
        ):
            problems.append(f"Split: rank {halves.Get_rank()} of {halves.Get_size()}")
        for round_ in range(10):
            requests, received = [], {}
            for peer in range(size):
                if peer == rank:
                    continue
                buf = np.zeros(4, dtype=np.float64)
                received[peer] = buf
                requests.append(comm.Irecv(buf, peer, round_))
                requests.append(comm.Isend(np.full(4, rank * 1000.0 + t + round_), peer, round_))
            objects = [comm.irecv(source=peer, tag=50) for peer in range(size) if peer != rank]
            sends = [
                comm.isend((rank, t, round_), peer, 50) for peer in range(size) if peer != rank
            ]
            MPI.Request.Waitall(requests)
            got = MPI.Request.waitall(objects)
            MPI.Request.Waitall(sends)
            for peer, buf in received.items():
                if not (buf == peer * 1000.0 + t + round_).all():
                    problems.append(f"round {round_}: {buf} from {peer}")
            if sorted(got) != [(p, t, round_) for p in range(size) if p != rank]:
                problems.append(f"round {round_}: objects {got}")
            comm.Barrier()
            if comm.bcast((t, round_) if rank == 0 else None) != (t, round_):
                problems.append("bcast")
            if comm.allreduce(rank + t) != sum(range(size)) + size * t:
                problems.append("allreduce")
            total = np.zeros(3)
            comm.Allreduce(np.full(3, float(rank)), total)
            if not (total == sum(range(size))).all():
                problems.append(f"Allreduce {total}")
            if comm.allgather((rank, t)) != [(r, t) for r in range(size)]:
                problems.append("allgather")
            if halves.allreduce(1) != halves.Get_size():
                problems.append("allreduce on the Split")
        halves.Free()
        comm.Free()

    problems = run_threads(work, THREADS)
    for base in bases:
        base.Free()
    return problems


def main() -> None:
    global POOL
    if "--threads-before-init" in sys.argv[1:]:
        POOL = Pool(2 * THREADS)
    report: dict = {"levels": levels()}
    world = MPI.COMM_WORLD
    report["rank"] = world.Get_rank()
    report["thread_level"] = MPI.Query_thread()
    report["shared"] = shared(world)
    world.Barrier()
    report["private"] = private(world)
    world.Barrier()
    print(json.dumps(report), flush=True)
    MPI.Finalize()


if __name__ == "__main__":
    main()
    sys.exit(0)
