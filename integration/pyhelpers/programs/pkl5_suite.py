"""``ompy.util.pkl5`` across ranks: every call checked against what each rank knows it must get.

Steps (each rank's objects are made from its rank, so every receiver can compute the expected):

1. point to point in a ring: send/recv, isend + mprobe/recv, issend + improbe/irecv, ssend,
   sendrecv, objects with numpy arrays (out-of-band parts) and without;
2. every collective at every root on the world, checked element by element;
3. the same on an intercommunicator between the even and the odd ranks (ROOT/PROC_NULL roots);
4. threads: two threads per rank send to the next rank on one tag at once; parts never mix.

Prints ``pkl5 ok RANK CHECKS`` per rank; any failed check raises (and the job fails).
"""

import sys
import threading

import numpy as np

from ompy import MPI
from ompy.util import pkl5

world = pkl5.Intracomm(MPI.COMM_WORLD)
rank, size = world.Get_rank(), world.Get_size()
checks = 0


def payload(owner, salt=0):
    return {
        "rank": owner,
        "salt": salt,
        "array": np.full(20_000 + owner, owner + salt, dtype=np.float64),
    }


def check(got, owner, salt=0):
    global checks
    want = payload(owner, salt)
    assert got["rank"] == owner and got["salt"] == salt, (got["rank"], got["salt"], owner, salt)
    np.testing.assert_array_equal(got["array"], want["array"])
    checks += 1


right, left = (rank + 1) % size, (rank - 1) % size

# 1. point to point.  Blocking sends of large parts in a ring would deadlock, as in any MPI, so
# the blocking pass goes round as a pipeline: rank 0 sends first, everyone else receives first.
if rank == 0:
    world.send(payload(rank, 1), right, 1)
check(world.recv(None, left, 1), left, 1)
if rank != 0:
    world.send(payload(rank, 1), right, 1)
request = world.isend(payload(rank, 2), right, 2)
check(world.mprobe(left, 2).recv(), left, 2)
request.wait()
request = world.issend(payload(rank, 3), right, 3)
message = None
while message is None:
    message = world.improbe(left, 3)
check(message.irecv().wait(), left, 3)
request.wait()
status = MPI.Status()
check(world.sendrecv(payload(rank, 4), right, 4, None, MPI.ANY_SOURCE, 4, status), left, 4)
assert status.Get_source() == left
if size > 1:
    if rank % 2 == 0:
        world.ssend(payload(rank, 5), right, 5)
    check(world.recv(None, left, 5), left, 5) if left % 2 == 0 else None
    if rank % 2 == 1:
        world.ssend(payload(rank, 5), right, 5)
    if left % 2 == 1:
        check(world.recv(None, left, 5), left, 5)

# 2. collectives at every root
for root in range(size):
    check(world.bcast(payload(root, 6) if rank == root else None, root), root, 6)
    gathered = world.gather(payload(rank, 7), root)
    if rank == root:
        for source, got in enumerate(gathered):
            check(got, source, 7)
    else:
        assert gathered is None
    items = [payload(dest, 8) for dest in range(size)] if rank == root else None
    check(world.scatter(items, root), rank, 8)
for source, got in enumerate(world.allgather(payload(rank, 9))):
    check(got, source, 9)
for source, got in enumerate(world.alltoall([payload(rank, 10 + dest) for dest in range(size)])):
    check(got, source, 10 + rank)

# 3. intercommunicator between even and odd ranks
if size > 1:
    color = rank % 2
    local = world.Split(color, rank)
    inter = pkl5.Intercomm(local.Create_intercomm(0, world, 1 - color, 99))
    remote_size = inter.Get_remote_size()
    remote_world = [r for r in range(size) if r % 2 != color]
    for root_color in (0, 1):
        for root in range(len([r for r in range(size) if r % 2 == root_color])):
            if color == root_color:
                mine = MPI.ROOT if local.Get_rank() == root else MPI.PROC_NULL
                got = inter.bcast(payload(rank, 20), mine)
                assert got is None
                gathered = inter.gather(None, mine)
                if mine == MPI.ROOT:
                    for index, item in enumerate(gathered):
                        check(item, remote_world[index], 21)
                else:
                    assert gathered is None
                items = [payload(r, 22) for r in remote_world] if mine == MPI.ROOT else None
                assert inter.scatter(items, mine) is None
            else:
                root_world = [r for r in range(size) if r % 2 == root_color][root]
                check(inter.bcast(None, root), root_world, 20)
                assert inter.gather(payload(rank, 21), root) is None
                check(inter.scatter(None, root), rank, 22)
    for index, got in enumerate(inter.allgather(payload(rank, 23))):
        check(got, remote_world[index], 23)
    for index, got in enumerate(inter.alltoall([payload(rank, 30 + r) for r in remote_world])):
        check(got, remote_world[index], 30 + rank)
    try:
        inter.bcast(None, remote_size)
    except MPI.Exception as error:
        assert error.Get_error_class() == MPI.ERR_ROOT
    else:
        raise AssertionError("a root beyond the remote group was accepted")
    inter.Free()
    local.Free()

# 4. two threads per rank send on one tag at once (needs THREAD_MULTIPLE)
if MPI.Query_thread() == MPI.THREAD_MULTIPLE:

    def sender(salt):
        for _ in range(5):
            world.send(payload(rank, salt), right, 40)

    threads = [threading.Thread(target=sender, args=(salt,)) for salt in (41, 42)]
    for thread in threads:
        thread.start()
    seen = {41: 0, 42: 0}
    for _ in range(10):
        got = world.recv(None, left, 40)
        check(got, left, got["salt"])
        seen[got["salt"]] += 1
    for thread in threads:
        thread.join()
    assert seen == {41: 5, 42: 5}, seen

world.Barrier()
print("pkl5 ok", rank, checks, flush=True)
sys.exit(0)
