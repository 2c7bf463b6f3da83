"""Every point-to-point call of the API over a real job; prints one JSON report per rank.

Run as ``ompy run -n N python p2p_suite.py SCHEDULES.json``; rank 0 checks the results of the
calls that involve it and every rank reports what it checked, so a failure names the call.
"""

import json
import sys

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checked = []


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"rank {rank}: {name} failed {detail}")
    checked.append(name)


right, left = (rank + 1) % size, (rank - 1) % size

# -- sizes from 0 B to 64 MiB, uppercase, around the ring ----------------------------------------
for nbytes in (0, 1, 1000, 4096, 65536, 1 << 20, 64 << 20):
    out = np.full(nbytes, rank % 251, dtype=np.uint8)
    got = np.empty(nbytes, dtype=np.uint8)
    status = MPI.Status()
    comm.Sendrecv(out, right, 1, got, left, 1, status)
    check(
        f"Sendrecv {nbytes} B",
        (got == left % 251).all()
        and status.Get_count(MPI.BYTE) == nbytes
        and status.source == left,
    )
    del out, got

# -- ANY_SOURCE / ANY_TAG, MPI order from one sender ----------------------------------------------
if rank == 0:
    seen = {}
    for _ in range((size - 1) * 5):
        value = np.zeros(2, dtype="i")
        status = MPI.Status()
        comm.Recv(value, MPI.ANY_SOURCE, MPI.ANY_TAG, status)
        seen.setdefault(status.source, []).append((status.tag, int(value[1])))
    check(
        "ANY_SOURCE order",
        all(seen[p] == [(p + i, i) for i in range(5)] for p in range(1, size)),
        str(seen),
    )
else:
    for i in range(5):
        comm.Send(np.array([rank, i], dtype="i"), 0, rank + i)

# -- modes: Ssend/Issend/Rsend/Bsend/Ibsend, persistent ------------------------------------------
MPI.Attach_buffer(bytearray(1 << 20))
buf = np.arange(1000, dtype="d") + rank
recvs = [comm.Irecv(np.empty(1000), left, tag) for tag in range(10, 15)]
comm.Barrier()  # the receives are posted: Rsend is allowed
comm.Ssend(buf, right, 10)
comm.Issend(buf, right, 11).Wait()
comm.Rsend(buf, right, 12)
comm.Bsend(buf, right, 13)
comm.Ibsend(buf, right, 14).Wait()
statuses = []
MPI.Request.Waitall(recvs, statuses)
check("send modes", [s.tag for s in statuses] == list(range(10, 15)))
MPI.Detach_buffer()
psend = comm.Send_init(buf, right, 20)
precv = comm.Recv_init(got := np.empty(1000), left, 20)
for round_ in range(3):
    buf[0] = round_
    MPI.Prequest.Startall([precv, psend])
    MPI.Request.Waitall([psend, precv])
    check("persistent round", got[0] == round_ and got[1] == left + 1)

# -- pickled objects: out-of-band arrays, wildcards, matched probes -----------------------------
payload = {"rank": rank, "array": np.full(300_000, rank, dtype="f8"), "small": list(range(rank))}
request = comm.isend(payload, right, tag=30)
obj = comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
request.wait()
check("pickled with buffers", obj["rank"] == left and obj["array"].sum() == left * 300_000)
comm.send(("probe me", rank), right, tag=31)
status = MPI.Status()
comm.probe(MPI.ANY_SOURCE, 31, status)
message = comm.mprobe(status.source, 31)
check("mprobe/recv", message.recv() == ("probe me", left))
reqs = [comm.irecv(source=left, tag=t) for t in (40, 41)]
comm.ssend("forty", right, tag=40)
comm.send(np.arange(10), right, tag=41)
objs = MPI.Request.waitall(reqs)
check("irecv/waitall objects", objs[0] == "forty" and objs[1].tolist() == list(range(10)))
check("sendrecv", comm.sendrecv(rank, right, 42, None, left, 42) == left)

# -- truncation, PROC_NULL, cancel, argument errors -----------------------------------------------
comm.Send(np.zeros(10), right, 50)
try:
    comm.Recv(np.zeros(5), left, 50)
except MPI.Exception as error:
    check("truncate", error.Get_error_class() == MPI.ERR_TRUNCATE)
else:
    check("truncate raises", False)
status = MPI.Status()
comm.Recv(np.zeros(1), MPI.PROC_NULL, 0, status)
check("PROC_NULL", status.source == MPI.PROC_NULL and status.tag == MPI.ANY_TAG)
pending = comm.Irecv(np.zeros(1), left, 60)
pending.Cancel()
pending.Wait(status)
check("cancel", status.Is_cancelled())
for call, args, cls in (
    (comm.Send, (np.zeros(1), size), MPI.ERR_RANK),
    (comm.Send, (np.zeros(1), 0, -5), MPI.ERR_TAG),
    (comm.Recv, (np.zeros(1), 0, -5), MPI.ERR_TAG),
):
    try:
        call(*args)
    except MPI.Exception as error:
        check("argument error", error.Get_error_class() == cls)
check("TAG_UB", comm.Get_attr(MPI.TAG_UB) >= 32767)

# -- communicators ----------------------------------------------------------------------------
dup = comm.Dup()
half = comm.Split(rank % 2, -rank)
node = comm.Split_type(MPI.COMM_TYPE_SHARED)
check("Split", half.size == len(range(rank % 2, size, 2)) and half.Compare(comm) == MPI.UNEQUAL)
check("Split_type", node.size == size)
check("Dup", dup.Compare(comm) == MPI.CONGRUENT)
total = half.sendrecv(half.rank, (half.rank + 1) % half.size, 0, None, MPI.ANY_SOURCE, 0)
check("traffic on a split", total == (half.rank - 1) % half.size)
half.Free()
dup.Free()

# -- hypothesis-generated schedules: exactly once, intact, in order ------------------------------
with open(sys.argv[1]) as handle:
    schedules = json.load(handle)
for number, schedule in enumerate(schedules):
    sends = [s for s in schedule if s[0] % size == rank]
    expected = [s for s in schedule if s[1] % size == rank]
    requests = []
    for index, (src, dst, tag, nbytes) in enumerate(schedule):
        if src % size == rank:
            data = np.full(nbytes, index % 256, dtype=np.uint8)
            requests.append(comm.Isend(data, dst % size, tag))
    got = {}
    for _ in expected:
        status = MPI.Status()
        comm.Probe(MPI.ANY_SOURCE, MPI.ANY_TAG, status)
        data = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
        comm.Recv(data, status.source, status.tag)
        got.setdefault((status.source, status.tag), []).append(data)
    MPI.Request.Waitall(requests)
    for key in got:
        want = [
            (i, n)
            for i, (s, d, t, n) in enumerate(schedule)
            if (s % size, t) == key and d % size == rank
        ]
        ok = len(want) == len(got[key]) and all(
            arr.size == n and (arr == i % 256).all()
            for (i, n), arr in zip(want, got[key], strict=False)
        )
        check(f"schedule {number} {key}", ok)
    comm.Barrier()

print(json.dumps({"rank": rank, "size": size, "checked": len(checked)}), flush=True)
