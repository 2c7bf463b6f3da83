"""Requests, statuses and ``None`` as ``IN_PLACE``, run by every rank of a 3-rank job.

Each rank prints one JSON line: its rank and ``checks``, a name -> [passed, detail] map; the
test requires every check to pass on every rank.  Steps, in this order on every rank:

1. cancel of a send nothing has matched yet, eager and rendezvous, standard and synchronous:
   each rank sends to its right neighbour, which probes the message (so it waits unmatched in
   its unexpected queue) and says so; the sender cancels, its status says cancelled, and the
   receiver's next receive with that tag gets the message sent after it, not the cancelled one;
2. cancel of a send the receiver already matched: not cancelled, delivered; cancel of a receive
   nothing matched: cancelled;
3. a generalized request in a ``Waitall`` with point-to-point requests, completed by another
   thread while the ``Waitall`` waits, its ``query_fn`` filling its status;
4. ``Get_status_all/any/some`` before and after the messages arrive (non-destructive), and
   ``Waitall`` over a tuple with ``REQUEST_NULL`` entries and a short statuses list;
5. every collective that takes ``IN_PLACE``, once with ``IN_PLACE`` and once with ``None``:
   the same results; ``None`` where it is not allowed raises ``TypeError`` on every rank.
"""

from __future__ import annotations

import json
import threading

import numpy as np

from ompy import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
checks: dict[str, list] = {}


def check(name: str, passed: bool, detail: object = "") -> None:
    checks[name] = [bool(passed), str(detail)]


def pattern(nbytes: int, seed: int) -> np.ndarray:
    return (np.arange(nbytes) * 7 + seed).astype(np.uint8)


# 1. cancel of unmatched sends -------------------------------------------------------------
for label, nbytes in (("eager", 100), ("rendezvous", 1 << 20)):
    for mode in ("Isend", "Issend"):
        tag = 50 + len(checks)  # a tag per case: a neighbour ahead of us uses the next one
        name = f"cancel:{label}:{mode}"
        send = getattr(world, mode)(pattern(nbytes, rank), right, tag)
        world.Probe(left, tag)  # the left neighbour's message waits here, unmatched
        world.Send(np.zeros(1, np.uint8), left, 51)  # "your message is here"
        world.Recv(np.zeros(1, np.uint8), right, 51)
        send.Cancel()
        status = MPI.Status()
        send.Wait(status)
        cancelled = status.Is_cancelled()
        world.Barrier()  # every cancel answered before anyone posts a receive for the tag
        follow = pattern(nbytes, rank + 100)
        later = world.Isend(follow, right, tag)
        got = np.zeros(nbytes, np.uint8)
        world.Recv(got, left, tag)
        later.Wait()
        intact = np.array_equal(got, pattern(nbytes, left + 100))
        world.Barrier()
        leftover = world.Iprobe(left, tag)
        check(name, cancelled and intact and not leftover, (cancelled, intact, leftover))

# 2. a matched send is not cancelled; an unmatched receive is -------------------------------
got = np.zeros(8, np.uint8)
receive = world.Irecv(got, left, 60)
send = world.Issend(pattern(8, rank), right, 60)
receive.Wait()
while not send.Get_status():  # a synchronous send is complete once its receive matched
    pass
send.Cancel()
status = MPI.Status()
send.Wait(status)
check(
    "cancel:matched send stays",
    not status.Is_cancelled() and np.array_equal(got, pattern(8, left)),
    status.Is_cancelled(),
)
receive = world.Irecv(np.zeros(8, np.uint8), left, 61)
receive.Cancel()
status = MPI.Status()
receive.Wait(status)
check("cancel:unmatched receive", status.Is_cancelled() and not receive, status)
world.Barrier()

# 3. a generalized request among point-to-point requests -----------------------------------
answers = []


def query(status: MPI.Status, label: str) -> None:
    answers.append(label)
    status.Set_source(rank)
    status.Set_tag(777)
    status.Set_elements(MPI.BYTE, 3)


greq = MPI.Grequest.Start(query, None, None, args=("mine",))
got = np.zeros(16, np.uint8)
requests = [world.Irecv(got, left, 70), greq, world.Isend(pattern(16, rank), right, 70)]
timer = threading.Timer(0.2, greq.Complete)
timer.start()
statuses: list = []
MPI.Request.Waitall(requests, statuses)
timer.join()
check(
    "grequest:in waitall",
    [s.tag for s in statuses] == [70, 777, statuses[2].tag]
    and statuses[1].source == rank
    and statuses[1].Get_count(MPI.BYTE) == 3
    and answers == ["mine"]
    and np.array_equal(got, pattern(16, left))
    and not any(requests),
    [(s.source, s.tag) for s in statuses],
)
greq = MPI.Grequest.Start()
greq.complete({"from": rank})
flag, obj = MPI.Request.testall([greq, MPI.REQUEST_NULL])
check("grequest:lowercase", flag and obj == [{"from": rank}, None], (flag, obj))

# 4. Get_status_* and Waitall over a tuple ------------------------------------------------
out = [np.zeros(4, np.uint8) for _ in range(2)]
pending = (world.Irecv(out[0], left, 80), MPI.REQUEST_NULL, world.Irecv(out[1], left, 81))
before = (
    MPI.Request.Get_status_all(pending),
    MPI.Request.Get_status_any(pending),
    MPI.Request.Get_status_some(pending),
)
world.Barrier()  # nobody has sent yet: nothing can have matched
world.Send(pattern(4, 1), right, 81)
status = MPI.Status()
while not (found := MPI.Request.Get_status_any(pending, status))[1]:
    pass
any_index = found[0]
world.Send(np.zeros(1, np.uint8), left, 82)  # "I saw 81": only now may the 80 come
world.Recv(np.zeros(1, np.uint8), right, 82)
world.Send(pattern(4, 0), right, 80)
while not MPI.Request.get_status_all(pending):
    pass
some = MPI.Request.get_status_some(pending)
still_active = bool(pending[0]) and bool(pending[2])
statuses = [MPI.Status()]
MPI.Request.Waitall(pending, statuses)
check(
    "get_status:variants",
    before == (False, (MPI.UNDEFINED, False), [])
    and any_index == 2
    and status.tag == 81
    and some == [0, 2]
    and still_active
    and [s.tag for s in statuses] == [80, MPI.ANY_TAG, 81]
    and not any(pending),
    (before, any_index, status.tag, some),
)
world.Barrier()

# 5. None as IN_PLACE in collectives ------------------------------------------------------


def own(r: int, n: int = size) -> np.ndarray:
    return np.arange(n, dtype="i") + 10 * r


def collectives(place: object) -> dict[str, list]:
    """Every collective that takes IN_PLACE, with ``place`` as that buffer; the results."""
    results: dict[str, list] = {}
    out = np.zeros(size * 2, "i")
    out[2 * rank : 2 * rank + 2] = own(rank, 2)
    world.Allgather(place, out)
    results["Allgather"] = out.tolist()
    out = np.zeros(size * 2, "i")
    out[2 * rank : 2 * rank + 2] = own(rank, 2)
    world.Iallgatherv(place, [out, [2] * size, [0, 2, 4], MPI.INT]).Wait()
    results["Iallgatherv"] = out.tolist()
    out = own(rank, size * 2).copy()
    world.Alltoall(place, out)
    results["Alltoall"] = out.tolist()
    out = own(rank, size * 2).copy()
    world.Alltoallv(place, [out, [2] * size, [0, 2, 4], MPI.INT])
    results["Alltoallv"] = out.tolist()
    out = own(rank).copy()
    world.Alltoallw(place, [out, [1] * size, [0, 4, 8], [MPI.INT] * size])
    results["Alltoallw"] = out.tolist()
    out = own(rank).copy()
    world.Allreduce(place, out, op=MPI.MAX)
    results["Allreduce"] = out.tolist()
    out = own(rank).copy()
    world.Scan(place, out)
    results["Scan"] = out.tolist()
    out = own(rank).copy()
    world.Iexscan(place, out).Wait()
    results["Iexscan"] = out.tolist() if rank else []
    out = own(rank, size * 2).copy()
    world.Reduce_scatter_block(place, out)
    results["Reduce_scatter_block"] = out[:2].tolist()
    out = own(rank, size * 2).copy()
    world.Reduce_scatter(place, out, [2] * size)
    results["Reduce_scatter"] = out[:2].tolist()
    if rank == 1:
        out = np.zeros(size * 2, "i")
        out[2:4] = own(1, 2)
        world.Gather(place, out, root=1)
        results["Gather"] = out.tolist()
        out = own(1).copy()
        world.Reduce(place, out, root=1)
        results["Reduce"] = out.tolist()
        whole = own(9, size * 2).copy()
        world.Scatter(whole, place, root=1)
        results["Scatter"] = whole.tolist()
        world.Scatterv([whole, [2] * size, [0, 2, 4], MPI.INT], place, root=1)
    else:
        world.Gather(own(rank, 2), None, root=1)
        world.Reduce(own(rank), None, root=1)
        out = np.zeros(2, "i")
        world.Scatter(None, out, root=1)
        results["Scatter"] = out.tolist()
        world.Scatterv(None, out, root=1)
        results["Scatterv"] = out.tolist()
    return results


with_in_place = collectives(MPI.IN_PLACE)
with_none = collectives(None)
for operation, result in with_in_place.items():
    check(f"none:{operation}", with_none[operation] == result, (result, with_none[operation]))
check("none:allreduce is right", with_none["Allreduce"] == own(size - 1).tolist())
for name, call in (
    ("Bcast", lambda: world.Bcast(None)),
    ("Allreduce recvbuf", lambda: world.Allreduce(own(rank), None)),
    ("Gather(None, None)", lambda: world.Gather(None, None)),
    ("Ireduce(None, None)", lambda: world.Ireduce(None, None, root=2)),
):
    try:
        call()
    except TypeError as error:
        check(f"none rejected:{name}", "None" in str(error), error)
    else:
        check(f"none rejected:{name}", False, "no TypeError")
world.Barrier()  # every rank raised above: nobody is left inside a collective

print(json.dumps({"rank": rank, "checks": checks}), flush=True)
