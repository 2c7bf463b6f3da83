"""Sessions and the world model on one instance, run by every rank of a 3-rank job.

Each rank prints one JSON line: its rank and what each step observed; the test compares the
observations with what MPI says they must be.  Steps, in this order on every rank:

1. a session before ``MPI.Init`` (it starts the instance), ``MPI.Init``, a session after it;
2. communicators from the ``mpi://WORLD`` and ``mpi://SELF`` process sets, with
   point-to-point (a ring, a rendezvous-sized message) and collectives on them;
3. two concurrent ``Create_from_group`` calls with different stringtags on overlapping groups
   ({0, 1} and {2, 1}: rank 2's messages reach rank 1 while it is busy with the first);
4. a subset ({2, 0}) builds a communicator while rank 1 works on its own; ``Comm.Create_group``
   called by the members only;
5. ``MPI.Finalize`` while the sessions live: their communicators keep working, and a session
   started now still gets one;
6. the sessions end; the last one tears the instance down, after which MPI cannot start again.
"""

from __future__ import annotations

import json

import numpy as np

from ompy.ompi.api import rc

rc.initialize = False
from ompy import MPI  # noqa: E402


def ring(comm: MPI.Intracomm) -> list:
    """Send my rank to the next member, receive the previous one's; then a sum and a bcast."""
    out = np.zeros(1, dtype=np.int64)
    request = comm.Irecv(out, (comm.rank - 1) % comm.size, 11)
    comm.Send(np.array([comm.rank], dtype=np.int64), (comm.rank + 1) % comm.size, 11)
    request.Wait()
    return [
        int(out[0]),
        comm.allreduce(comm.rank),
        comm.bcast(comm.rank if comm.rank == 0 else None),
    ]


report: dict = {}
before = MPI.Session.Init()
report["initialized_by_session"] = MPI.Is_initialized()
MPI.Init()
world = MPI.COMM_WORLD
rank = report["rank"] = world.Get_rank()
after = MPI.Session.Init()
report["thread_level"] = after.Get_info().Get("thread_level")
report["psets"] = [before.Get_nth_pset(n) for n in range(before.Get_num_psets())]
report["world_size"] = before.Get_pset_info("mpi://WORLD").Get("mpi_size")

# 2. the world and self process sets
whole = MPI.Intracomm.Create_from_group(before.Create_group("mpi://WORLD"), "org.ompy.whole")
alone = MPI.Intracomm.Create_from_group(
    MPI.Group.Create_from_session_pset(after, "mpi://SELF"), "org.ompy.alone"
)
report["whole"] = [whole.rank, whole.size, *ring(whole)]
report["alone"] = [alone.size, alone.sendrecv(f"me {rank}", 0, 1, None, 0, 1)]
big = np.arange(300_000, dtype=np.float64)  # beyond every eager limit
if rank == 0:
    whole.Send(big, 2, 5)
elif rank == 2:
    got = np.empty_like(big)
    whole.Recv(got, 0, 5)
    report["big"] = bool(np.array_equal(got, big))

# 3. concurrent calls with different stringtags on overlapping groups
group = whole.Get_group()
made = {}
if rank in (0, 1):
    made["left"] = MPI.Intracomm.Create_from_group(group.Incl([0, 1]), "left")
if rank in (2, 1):
    made["right"] = MPI.Intracomm.Create_from_group(group.Incl([2, 1]), "right")
report["overlapping"] = {name: [c.rank, c.size, *ring(c)] for name, c in made.items()}

# 4. a subset, while rank 1 does something else; Create_group by the members only
if rank in (0, 2):
    pair = MPI.Intracomm.Create_from_group(group.Incl([2, 0]), "pair")
    evens = world.Create_group(world.Get_group().Incl([0, 2]), tag=7)
    report["pair"] = [pair.rank, *ring(pair), evens.rank, *ring(evens)]
else:
    report["pair"] = alone.allreduce(41) + 1

# 5. the world model ends; the sessions' communicators go on
MPI.Finalize()
report["world_finalized"] = MPI.Is_finalized()
report["whole_after"] = [*ring(whole), *ring(alone)]
late = MPI.Session.Init()
latest = MPI.Intracomm.Create_from_group(late.Create_group("mpi://WORLD"), "late")
report["late"] = [latest.rank, *ring(latest)]

# 6. the end
for comm in (latest, whole, alone, *made.values()):
    comm.Free()
for session in (late, before, after):
    session.Finalize()
try:
    MPI.Session.Init()
except MPI.Exception as error:
    report["restart"] = str(error)
print(json.dumps(report), flush=True)
