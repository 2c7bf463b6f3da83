"""Communicator creation and the rest of point-to-point under ompy run (issue 15, comms).

Every rank prints one JSON line: its rank and the checks it passed; a failed check raises (and
ompy run reports the rank's exit).  It covers Isendrecv/Isendrecv_replace and Sendrecv in every
buffer form, Idup/Idup_with_info/Dup_with_info, Split_type with every split type, Create_group
tags, and partitioned point-to-point.
"""

import json
import os

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
checks = []


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"rank {rank}: {name} failed {detail}")
    checks.append(name)


def raises(call, *args, error_class=None, **kwargs):
    try:
        call(*args, **kwargs)
    except MPI.Exception as error:
        return error_class is None or error.Get_error_class() == error_class, str(error)
    return False, "no exception"


# -- send-receive: every buffer form, blocking and not ----------------------------------------
vector = MPI.DOUBLE.Create_vector(3, 1, 2).Commit()
data = np.arange(8, dtype="d") + 100 * rank
theirs = np.arange(8, dtype="d") + 100 * left
forms = [
    ("buf", lambda b: b, slice(None)),
    ("[buf, DOUBLE]", lambda b: [b, MPI.DOUBLE], slice(None)),
    ("[buf, count]", lambda b: [b, 5], slice(0, 5)),
    ("[buf, count, type]", lambda b: [b, 3, MPI.DOUBLE], slice(0, 3)),
    ("[buf, (count, displ), type]", lambda b: [b, (2, 4), MPI.DOUBLE], slice(4, 6)),
    ("[buf, count, displ, type]", lambda b: [b, 3, 1, MPI.DOUBLE], slice(1, 4)),
    ("[buf, 1, vector]", lambda b: [b, 1, vector], slice(0, 6, 2)),
    ("strided", lambda b: b[::2], slice(None, None, 2)),
]
for name, form, part in forms:
    for call in ("Sendrecv", "Isendrecv", "Sendrecv_replace", "Isendrecv_replace"):
        status = MPI.Status()
        out = np.full(8, -1.0)
        if call == "Sendrecv":
            comm.Sendrecv(form(data), right, 3, form(out), left, 3, status)
        elif call == "Isendrecv":
            comm.Isendrecv(form(data), right, 3, form(out), left, 3).Wait(status)
        else:
            out = data.copy()
            if call == "Sendrecv_replace":
                comm.Sendrecv_replace(form(out), right, 4, left, 4, status)
            else:
                comm.Isendrecv_replace(form(out), right, 4, left, 4).Wait(status)
        ok = np.array_equal(out[part], theirs[part]) and status.Get_source() == left
        check(f"{call} {name}", ok, (out, status.Get_source()))
big = np.full(300_000, rank, dtype="d")  # rendezvous-sized, both ways at once
got = np.zeros_like(big)
request = comm.Isendrecv(big, right, 5, got, left, 5)
request.Wait()
check("isendrecv rendezvous", (got == left).all())
comm.Isendrecv_replace(big, right, 6, left, 6).Wait()
check("isendrecv_replace rendezvous", (big == left).all())
status = MPI.Status()
comm.Isendrecv(None, MPI.PROC_NULL, 0, None, MPI.PROC_NULL).Wait(status)
check("isendrecv proc_null", status.Get_source() == MPI.PROC_NULL)
check(
    "isendrecv bad rank",
    raises(comm.Isendrecv, data, size, 0, data, 0, error_class=MPI.ERR_RANK)[0],
)

# -- Idup / Idup_with_info / Dup_with_info ----------------------------------------------------
new, request = comm.Idup()
if size > 1 and rank == 0:
    # the others call Idup only after this message: the request cannot be complete yet
    check("idup pending", not request.Test())
    comm.Send(np.array([1], "i"), 1, 7)
elif rank == 1:
    flag = np.zeros(1, "i")
    comm.Recv(flag, 0, 7)
request.Wait()
check("idup", new.Get_size() == size and new.Get_rank() == rank)
check("idup allreduce", new.allreduce(rank) == size * (size - 1) // 2)
check("idup Allreduce", new.Compare(comm) == MPI.CONGRUENT)
buf = np.array([rank], "i")
new.Allreduce(MPI.IN_PLACE, buf, MPI.SUM)
check("idup buffer allreduce", buf[0] == size * (size - 1) // 2)
info = MPI.Info.Create()
info.Set("comms_hint", "yes")
hinted, r1 = comm.Idup_with_info(info)
second, r2 = new.Idup()
dup = comm.Dup_with_info(info)
MPI.Request.Waitall([r2, r1])
check("idup_with_info hints", hinted.Get_info().Get("comms_hint") == "yes")
check("dup_with_info hints", dup.Get_info().Get("comms_hint") == "yes")
ids = {c.py2f() for c in (new, hinted, second, dup)}
check("idup distinct handles", len(ids) == 4)
got = second.bcast(rank, root=size - 1)
check("idup of idup", got == size - 1)
for c in (new, hinted, second, dup):
    c.Free()
info.Free()

# -- Split_type --------------------------------------------------------------------------------
shared = comm.Split_type(MPI.COMM_TYPE_SHARED, key=-rank)
check("split_type shared", shared.Get_size() == size and shared.Get_rank() == size - 1 - rank)
shared.Free()
info = MPI.Info.Create()
info.Set("mpi_hw_resource_type", "mpi_shared_memory")
guided = comm.Split_type(MPI.COMM_TYPE_HW_GUIDED, info=info)
check("split_type hw_guided shared memory", guided.Get_size() == size)
guided.Free()
guided = comm.Split_type(MPI.COMM_TYPE_RESOURCE_GUIDED, info=info)
check("split_type resource_guided shared memory", guided.Get_size() == size)
guided.Free()
info.Free()
check("split_type hw_guided no key", comm.Split_type(MPI.COMM_TYPE_HW_GUIDED) == MPI.COMM_NULL)
# The processors of every rank (ompy run may have bound each rank to its own core).
bound = os.sched_getaffinity(0)
cpus = sorted(set().union(*comm.allgather(bound)))
os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
info = MPI.Info.Create()
info.Set("mpi_hw_resource_type", "hwloc://PU")
per_pu = comm.Split_type(MPI.COMM_TYPE_HW_GUIDED, key=rank, info=info)
expected = [r for r in range(size) if r % len(cpus) == rank % len(cpus)]
check("split_type hw_guided pu", per_pu.Get_size() == len(expected), per_pu.Get_size())
check("split_type hw_guided pu ranks", per_pu.Get_rank() == expected.index(rank))
per_pu.Free()
info.Free()
info = MPI.Info.Create()
unguided = comm.Split_type(MPI.COMM_TYPE_HW_UNGUIDED, key=rank, info=info)
if len(cpus) > 1 and size > 1:
    check("split_type hw_unguided", unguided.Get_size() == len(expected), unguided.Get_size())
    check("split_type hw_unguided info", info.Get("mpi_hw_resource_type").startswith("hwloc://"))
    unguided.Free()
else:
    check("split_type hw_unguided null", unguided == MPI.COMM_NULL)
info.Free()
os.sched_setaffinity(0, bound)
info = MPI.Info.Create()
info.Set("mpi_pset_name", "mpi://SELF")
alone = comm.Split_type(MPI.COMM_TYPE_RESOURCE_GUIDED, info=info)
check("split_type pset self", alone.Get_size() == 1)
alone.Free()
info.Free()
ok, text = raises(
    comm.Split_type,
    MPI.COMM_TYPE_SHARED if rank else MPI.COMM_TYPE_HW_GUIDED,
    error_class=MPI.ERR_ARG,
)
check("split_type mismatch", ok if size > 1 else True, text)

# -- Create_group tags -------------------------------------------------------------------------
evens = comm.group.Incl(list(range(0, size, 2)))
if rank % 2 == 0:
    a = comm.Create_group(evens, tag=11)
    b = comm.Create_group(evens, tag=12)
    check("create_group tags", a.Get_size() == b.Get_size() == evens.Get_size())
    check("create_group distinct", a.py2f() != b.py2f())
    check("create_group works", b.allreduce(1) == evens.Get_size())
    a.Free()
    b.Free()
ok, text = raises(comm.Create_group, comm.group, tag=-1, error_class=MPI.ERR_TAG)
check("create_group bad tag", ok, text)
evens.Free()

# -- partitioned point-to-point ----------------------------------------------------------------
for send_parts, recv_parts, count in ((1, 1, 6), (3, 3, 6), (4, 2, 8), (2, 4, 8), (8, 8, 40000)):
    sbuf = np.zeros(count, "d")
    rbuf = np.full(count, -1.0)
    send = comm.Psend_init(sbuf, send_parts, right, 2)
    recv = comm.Precv_init(rbuf, recv_parts, left, 2)
    for round_ in range(3):
        sbuf[:] = 1000 * round_ + rank
        comm.Barrier()
        recv.Start()
        send.Start()
        for partition in reversed(range(send_parts)):
            send.Pready(partition)
        for partition in range(recv_parts):
            while not recv.Parrived(partition):
                pass
        status = MPI.Status()
        MPI.Request.Waitall([recv, send], [status])
        ok = (rbuf == 1000 * round_ + left).all() and status.Get_source() == left
        check(f"partitioned {send_parts}->{recv_parts} x{count} round {round_}", ok, rbuf[:4])
    send.Free()
    recv.Free()
# early partitions arrive before the rest is ready
sbuf, rbuf = np.arange(12, dtype="i"), np.zeros(12, "i")
send = comm.Psend_init(sbuf, 3, right, 3)
recv = comm.Precv_init(rbuf, 3, left, 3)
recv.Start()
send.Start()
send.Pready(0)
while not recv.Parrived(0):
    pass
check("parrived early", (rbuf[:4] == [0, 1, 2, 3]).all() and not recv.Parrived(2))
comm.Barrier()
send.Pready_list([1, 2])
MPI.Request.Waitall([send, recv])
check("partitioned pready_list", (rbuf == np.arange(12)).all())
ok, text = raises(send.Pready, 0, error_class=MPI.ERR_REQUEST)
check("pready inactive", ok, text)
send.Start()
ok, text = raises(send.Pready, 3, error_class=MPI.ERR_ARG)
check("pready bad partition", ok and "partition 3 does not exist" in text, text)
recv.Start()
send.Pready_range(0, 2)
MPI.Request.Waitall([send, recv])
send.Free()
recv.Free()
# mismatched sizes: both sides fail, nothing hangs
send = comm.Psend_init(np.zeros(4, "i"), 2, right, 4)
recv = comm.Precv_init(np.zeros(6, "i"), 2, left, 4)
recv.Start()
send.Start()
send.Pready_range(0, 1)
ok_send, text = raises(send.Wait, error_class=MPI.ERR_ARG)
ok_recv, text2 = raises(recv.Wait, error_class=MPI.ERR_ARG)
check("partitioned mismatch", ok_send and ok_recv and "same number of bytes" in text, text)
send.Free()
recv.Free()
ok, text = raises(comm.Precv_init, np.zeros(2), 1, error_class=MPI.ERR_ARG)
check("precv wildcard refused", ok, text)

comm.Barrier()
print(json.dumps({"rank": rank, "passed": checks}), flush=True)
