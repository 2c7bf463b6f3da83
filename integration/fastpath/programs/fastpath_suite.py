"""The small-message fast path's semantics, checked by every rank of one job.

Rank 0 receives, every other rank sends to it (one section after another, each closed by a
barrier).  Each rank prints one JSON line: ``{"rank": r, "problems": [...], "checked": {...}}``
with what it found wrong and how many checks each section made.  Sections:

- ``inline`` (with ``--inline``: over sm): a message already in the peer's ring is received by
  the PML's ``recv_now`` (the fast path is real, not only the general one), with its status;
- ``wildcard``: ``ANY_SOURCE`` receives posted while fast-path messages arrive take them in
  order, and a specific blocking receive never overtakes an earlier wildcard (lock-step
  rounds, then every peer at once);
- ``probe``: ``Probe``/``Iprobe``/``Mprobe`` before a blocking receive: the probed message is
  the one received next, and an ``Mprobe``'d message is not received by a later ``Recv``;
- ``interleaved``: small (fast path) and large (rendezvous) messages, buffers and objects, on
  one tag from one sender, arrive in the order sent, intact;
- ``truncation``: a too-short buffer raises ``ERR_TRUNCATE`` and the next message is intact;
- ``cancel``: a cancelled receive from a source lets a blocking one take the message;
- ``threads`` (with ``--threads``): THREADS threads of each sender send on the fast path
  concurrently (each on its own tag); rank 0 receives each thread's messages in order, none
  lost;
- ``idle``: rank 0 blocks in ``Recv`` from rank 1 for IDLE seconds; the processor time it used
  is reported (the test bounds it).
"""

from __future__ import annotations

import json
import sys
import threading
import time

import numpy as np

from ompy import MPI

THREADS = 4
PER_THREAD = 200
IDLE = 2.0
LARGE = 300_000  # above btl sm's eager limit: a rendezvous


def stamp(index: int, size: int) -> np.ndarray:
    data = np.full(size, index % 251, dtype=np.uint8)
    data[:8] = np.frombuffer(np.int64(index).tobytes(), dtype=np.uint8)
    return data


def index_of(buf: np.ndarray) -> int:
    return int(np.frombuffer(buf[:8].tobytes(), dtype=np.int64)[0])


class Checks:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.checked: dict[str, int] = {}
        self.section = ""

    def check(self, ok: bool, what: str) -> None:
        self.checked[self.section] = self.checked.get(self.section, 0) + 1
        if not ok:
            self.problems.append(f"{self.section}: {what}")


def inline(comm: MPI.Intracomm, rank: int, size: int, c: Checks) -> None:
    """A message sitting in the ring is taken by recv_now itself, with its status."""
    comm.Barrier()
    if rank == 1:
        # Sent once rank 0 is out of the barrier, whose progress would otherwise take them.
        comm.recv(None, 0, 2)
        comm.Send(stamp(11, 8), 0, 3)
        comm.send({"object": 12}, 0, 4)
    if rank == 0:
        internal = comm._c  # the API's communicator: its PML is what Recv calls
        comm.send("go", 1, 2)
        buf = np.zeros(8, dtype=np.uint8)
        got = None
        deadline = time.monotonic() + 60
        while got is None and time.monotonic() < deadline:
            # No progress pass meanwhile: the message can only be in rank 1's ring, and
            # only the fast path (polling that ring) can take it.
            time.sleep(0.01)
            got = internal.pml.recv_now(memoryview(buf), 1, 3, internal)
        c.check(got is not None, "a message waiting in the ring was not taken inline")
        if got is not None:
            c.check(got[:2] == (3, 8) and index_of(buf) == 11, f"inline receive got {got[:2]}")
        status = MPI.Status()
        obj = comm.recv(None, 1, MPI.ANY_TAG, status)
        c.check(obj == {"object": 12}, f"object {obj!r}")
        c.check(
            (status.Get_source(), status.Get_tag()) == (1, 4),
            f"status {status.Get_source()}, {status.Get_tag()}",
        )
    comm.Barrier()


def wildcard(comm: MPI.Intracomm, rank: int, size: int, c: Checks) -> None:
    rounds = 50
    token = np.zeros(1, np.uint8)
    # Lock-step: a wildcard is posted, then a token lets one peer send two messages, which
    # reach the ring while a specific receive from that peer runs: the wildcard, posted
    # first, must take the first of them, so the specific receive may not take it inline.
    if rank:
        for i in range(rounds):
            comm.Recv(token, 0, 6)
            comm.Send(stamp(2 * i, 8), 0, 5)
            comm.Send(stamp(2 * i + 1, 8), 0, 5)
    else:
        for i in range(rounds):
            for peer in range(1, size):
                any_buf, own_buf = np.zeros(8, np.uint8), np.zeros(8, np.uint8)
                status = MPI.Status()
                request = comm.Irecv(any_buf, MPI.ANY_SOURCE, 5)
                comm.Send(token, peer, 6)
                comm.Recv(own_buf, peer, 5)
                request.Wait(status)
                got = (status.Get_source(), index_of(any_buf), index_of(own_buf))
                c.check(got == (peer, 2 * i, 2 * i + 1), f"round {i}: {got}")
    comm.Barrier()
    # Free-running: every peer sends at once, wildcard and specific receives interleave.
    if rank:
        for i in range(rounds):
            comm.Send(stamp(i, 8), 0, 5)
    else:
        seen: dict[int, list[int]] = {peer: [] for peer in range(1, size)}
        turn = 0
        while True:
            # A specific receive right after a wildcard: the wildcard takes the earlier
            # message.  The peer named keeps at least two messages to come, so both match.
            left = [peer for peer in range(1, size) if rounds - len(seen[peer]) >= 2]
            if not left:
                break
            peer = left[turn % len(left)]
            turn += 1
            any_buf, own_buf = np.zeros(8, np.uint8), np.zeros(8, np.uint8)
            status = MPI.Status()
            request = comm.Irecv(any_buf, MPI.ANY_SOURCE, 5)
            comm.Recv(own_buf, peer, 5)
            request.Wait(status)
            first = status.Get_source()
            if first == peer:
                seen[peer] += [index_of(any_buf), index_of(own_buf)]
            else:
                seen[first].append(index_of(any_buf))
                seen[peer].append(index_of(own_buf))
        for peer in range(1, size):
            while len(seen[peer]) < rounds:
                buf = np.zeros(8, np.uint8)
                comm.Recv(buf, peer, 5)
                seen[peer].append(index_of(buf))
            c.check(seen[peer] == list(range(rounds)), f"from {peer} in order {seen[peer][:12]}")
    comm.Barrier()


def probe(comm: MPI.Intracomm, rank: int, size: int, c: Checks) -> None:
    if rank == 1:
        for i in range(6):
            comm.Send(stamp(i, 8 + i), 0, 7)
    comm.Barrier()
    if rank == 0:
        status = MPI.Status()
        comm.Probe(1, 7, status)
        c.check(status.Get_count(MPI.BYTE) == 8, f"probe count {status.Get_count(MPI.BYTE)}")
        buf = np.zeros(64, np.uint8)
        comm.Recv(buf, 1, 7, status)
        c.check(index_of(buf) == 0 and status.Get_count(MPI.BYTE) == 8, "after Probe")
        while not comm.Iprobe(1, 7, status):
            pass
        comm.Recv(buf, 1, 7, status)
        c.check(index_of(buf) == 1 and status.Get_count(MPI.BYTE) == 9, "after Iprobe")
        message = comm.Mprobe(1, 7, status)
        c.check(status.Get_count(MPI.BYTE) == 10, "Mprobe count")
        comm.Recv(buf, 1, 7, status)  # the next one: the Mprobe'd message is out of matching
        c.check(index_of(buf) == 3 and status.Get_count(MPI.BYTE) == 11, "Recv after Mprobe")
        message.Recv(buf, status)
        c.check(index_of(buf) == 2 and status.Get_count(MPI.BYTE) == 10, "Message.Recv")
        for i in (4, 5):
            comm.Recv(buf, 1, 7, status)
            c.check(index_of(buf) == i, f"message {i} after the probes")
    comm.Barrier()


def interleaved(comm: MPI.Intracomm, rank: int, size: int, c: Checks) -> None:
    kinds = ["small", "large", "object", "small", "medium", "small", "large-object", "small"]
    sizes = {"small": 8, "large": LARGE, "medium": 60_000}
    rounds = 6
    if rank == 1:
        for r in range(rounds):
            for k, kind in enumerate(kinds):
                index = r * len(kinds) + k
                if kind in sizes:
                    comm.Send(stamp(index, sizes[kind]), 0, 9)
                elif kind == "object":
                    comm.send(("object", index), 0, 9)
                else:
                    comm.send(("array", index, stamp(index, LARGE)), 0, 9)
    elif rank == 0:
        buf = np.zeros(LARGE, np.uint8)
        status = MPI.Status()
        for r in range(rounds):
            for k, kind in enumerate(kinds):
                index = r * len(kinds) + k
                if kind in sizes:
                    comm.Recv(buf, 1, 9, status)
                    n = status.Get_count(MPI.BYTE)
                    ok = n == sizes[kind] and np.array_equal(buf[:n], stamp(index, n))
                    c.check(ok, f"{kind} #{index}: {n} bytes, index {index_of(buf)}")
                else:
                    obj = comm.recv(None, 1, 9)
                    if kind == "object":
                        c.check(obj == ("object", index), f"object #{index}: {obj!r:.60}")
                    else:
                        ok = obj[:2] == ("array", index) and np.array_equal(
                            obj[2], stamp(index, LARGE)
                        )
                        c.check(ok, f"large object #{index}")
    comm.Barrier()


def truncation(comm: MPI.Intracomm, rank: int, size: int, c: Checks) -> None:
    if rank == 1:
        comm.Send(stamp(1, 32), 0, 11)
        comm.Send(stamp(2, 16), 0, 11)
    elif rank == 0:
        short = np.zeros(16, np.uint8)
        try:
            comm.Recv(short, 1, 11)
        except MPI.Exception as error:
            c.check(error.Get_error_class() == MPI.ERR_TRUNCATE, f"error {error}")
        else:
            c.check(False, "a 32-byte message into 16 bytes did not raise")
        status = MPI.Status()
        comm.Recv(short, 1, 11, status)
        c.check(index_of(short) == 2 and status.Get_count(MPI.BYTE) == 16, "after truncation")
    comm.Barrier()


def cancel(comm: MPI.Intracomm, rank: int, size: int, c: Checks) -> None:
    if rank == 0:
        unused = np.zeros(8, np.uint8)
        request = comm.Irecv(unused, 1, 13)
        request.Cancel()
        status = MPI.Status()
        request.Wait(status)
        c.check(status.Is_cancelled(), "the posted receive was not cancelled")
    comm.Barrier()
    if rank == 1:
        comm.Send(stamp(7, 8), 0, 13)
    elif rank == 0:
        buf = np.zeros(8, np.uint8)
        comm.Recv(buf, 1, 13)
        c.check(index_of(buf) == 7, "the receive after a cancelled one")
    comm.Barrier()


def threads(comm: MPI.Intracomm, rank: int, size: int, c: Checks) -> None:
    errors: list[str] = []

    def sender(t: int) -> None:
        try:
            for i in range(PER_THREAD):
                if i % 3 == 2:
                    comm.send((t, i), 0, 100 + t)
                else:
                    comm.Send(stamp(i, 8), 0, 100 + t)
        except Exception as error:
            errors.append(f"thread {t}: {error!r}")

    def receiver(peer: int, t: int) -> None:
        buf = np.zeros(8, np.uint8)
        try:
            for i in range(PER_THREAD):
                if i % 3 == 2:
                    got = comm.recv(None, peer, 100 + t)
                    ok = got == (t, i)
                else:
                    comm.Recv(buf, peer, 100 + t)
                    ok = index_of(buf) == i
                if not ok:
                    errors.append(f"from {peer} thread {t}: message {i} out of order")
                    return
        except Exception as error:
            errors.append(f"receiver {peer}/{t}: {error!r}")

    if rank:
        workers = [threading.Thread(target=sender, args=(t,)) for t in range(THREADS)]
    else:
        workers = [
            threading.Thread(target=receiver, args=(peer, t))
            for peer in range(1, size)
            for t in range(THREADS)
        ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    c.check(not any(worker.is_alive() for worker in workers), "a thread did not finish")
    c.check(not errors, "; ".join(errors[:5]))
    comm.Barrier()


def idle(comm: MPI.Intracomm, rank: int, size: int, c: Checks) -> dict[str, float]:
    comm.Barrier()
    result: dict[str, float] = {}
    if rank == 1:
        time.sleep(IDLE)
        comm.Send(stamp(1, 8), 0, 15)
    elif rank == 0:
        buf = np.zeros(8, np.uint8)
        cpu, wall = time.process_time(), time.monotonic()
        comm.Recv(buf, 1, 15)
        result = {"cpu": time.process_time() - cpu, "wall": time.monotonic() - wall}
        c.check(index_of(buf) == 1, "the message after the idle wait")
    comm.Barrier()
    return result


def main() -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    c = Checks()
    sections = [wildcard, probe, interleaved, truncation, cancel]
    if "--inline" in sys.argv:  # the peers share a node and talk over sm
        sections.insert(0, inline)
    if "--threads" in sys.argv:
        sections.append(threads)
    for section in sections:
        c.section = section.__name__
        section(comm, rank, size, c)
    c.section = "idle"
    waited = idle(comm, rank, size, c)
    print(json.dumps({"rank": rank, "problems": c.problems, "checked": c.checked, **waited}))


if __name__ == "__main__":
    main()
