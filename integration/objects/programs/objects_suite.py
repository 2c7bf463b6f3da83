"""Attributes and handles across a 3-rank job, run by every rank.

Each rank prints JSON lines: one report of what the steps observed, then one line per delete
callback that ``MPI.Finalize`` runs.  Steps, in this order on every rank:

1. the predefined attributes of ``COMM_WORLD`` (values and Python types), and which of them a
   ``Dup`` of it and ``COMM_SELF`` have;
2. a keyval whose copy callback tags the value and whose delete callback records it: set on
   ``COMM_WORLD``, copied by two ``Dup`` generations (collectives work on the copies), deleted
   when each is freed, the last set first;
3. predefined handles sent to the next rank (pickled point to point and broadcast): they
   arrive as the very same objects; a handle to a predefined object arrives as a new handle of
   its class; a user communicator cannot be sent (``ValueError``), a user info arrives as a new
   info with the same items;
4. integer handles: ``toint``/``fromint`` and ``py2f``/``f2py`` round trips (communicators,
   infos, error handlers);
5. attributes on ``COMM_SELF`` and ``COMM_WORLD`` whose delete callbacks print a line when
   ``MPI.Finalize`` runs them: ``COMM_SELF``'s first (the last set first), while
   ``COMM_WORLD`` still communicates.
"""

from __future__ import annotations

import json
import sys

from ompy import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
report: dict = {"rank": rank}

# 1. predefined attributes
names = ["TAG_UB", "HOST", "IO", "WTIME_IS_GLOBAL", "APPNUM", "UNIVERSE_SIZE", "LASTUSEDCODE"]
values = {name: world.Get_attr(getattr(MPI, name)) for name in names}
report["predefined"] = values
report["predefined_types"] = sorted({type(value).__name__ for value in values.values()})
dup = world.Dup()
report["dup_predefined"] = {name: dup.Get_attr(getattr(MPI, name)) for name in names}
report["self_tag_ub"] = MPI.COMM_SELF.Get_attr(MPI.TAG_UB)
dup.Free()

# 2. user attributes: copied on Dup, deleted on Free
events: list = []


def copy_fn(comm: MPI.Comm, keyval: int, value: list) -> list:
    events.append(["copy", comm.Get_size(), value])
    return [*value, "copied"]


def delete_fn(comm: MPI.Comm, keyval: int, value: list) -> None:
    events.append(["delete", value])


keyval = MPI.Comm.Create_keyval(copy_fn, delete_fn)
world.Set_attr(keyval, [rank])
first = world.Dup()
second = first.Dup()
report["copied"] = [first.Get_attr(keyval), second.Get_attr(keyval), second.allreduce(rank)]
second.Free()
first.Free()
world.Delete_attr(keyval)
report["events"] = events
report["keyval_freed"] = MPI.Comm.Free_keyval(keyval) == MPI.KEYVAL_INVALID

# 3. predefined handles between ranks
constants = [
    MPI.INT,
    MPI.DOUBLE_INT,
    MPI.SUM,
    MPI.MAXLOC,
    MPI.COMM_WORLD,
    MPI.COMM_SELF,
    MPI.COMM_NULL,
    MPI.GROUP_EMPTY,
    MPI.REQUEST_NULL,
    MPI.MESSAGE_NO_PROC,
    MPI.IN_PLACE,
    MPI.BOTTOM,
    MPI.INFO_NULL,
    MPI.INFO_ENV,
    MPI.ERRHANDLER_NULL,
    MPI.ERRORS_RETURN,
    MPI.ERRORS_ARE_FATAL,
    MPI.ERRORS_ABORT,
]
right, left = (rank + 1) % size, (rank - 1) % size
world.send([constants, MPI.Comm(MPI.COMM_WORLD), MPI.Datatype(MPI.INT)], dest=right, tag=3)
received, world_copy, int_copy = world.recv(source=left, tag=3)
report["same_objects"] = [got is sent for got, sent in zip(received, constants, strict=True)]
report["copies"] = [
    type(world_copy).__name__,
    world_copy == MPI.COMM_WORLD and world_copy is not MPI.COMM_WORLD,
    int_copy == MPI.INT and int_copy is not MPI.INT,
]
report["bcast_int"] = world.bcast(MPI.INT if rank == 0 else None, root=0) is MPI.INT
user = world.Dup()
try:
    world.send(user, dest=right, tag=4)
    report["user_comm"] = "sent"
except ValueError as error:
    report["user_comm"] = str(error)
user.Free()
info = MPI.Info.Create({"from": str(rank)})
got = world.sendrecv(info, dest=right, sendtag=5, source=left, recvtag=5)
report["user_info"] = [type(got).__name__, got.items(), got != info]
got.Free()

# 4. integer handles
comm = world.Dup()
number = comm.toint()
handler = MPI.Comm.Create_errhandler(lambda comm, code: None)
report["integers"] = [
    MPI.Comm.fromint(number) == comm,
    MPI.Comm.f2py(comm.py2f()) == comm,
    MPI.Comm.fromhandle(comm.handle) == comm,
    MPI.Datatype.f2py(MPI.INT.py2f()) == MPI.INT,
    MPI.Info.fromint(info.toint()) == info,
    MPI.Errhandler.f2py(handler.py2f()) == handler,
    [MPI.COMM_WORLD.py2f(), MPI.COMM_SELF.py2f(), MPI.COMM_NULL.py2f()],
    [MPI.INFO_NULL.py2f(), MPI.INFO_ENV.py2f()],
    [MPI.ERRHANDLER_NULL.py2f(), MPI.ERRORS_ARE_FATAL.py2f(), MPI.ERRORS_RETURN.py2f()],
]
handler.Free()
info.Free()
comm.Free()

# 5. delete callbacks at Finalize
print(json.dumps(report), flush=True)


def at_finalize(comm: MPI.Comm, keyval: int, value: str) -> None:
    usable = MPI.COMM_WORLD.allreduce(1)  # COMM_WORLD still communicates
    line = {"rank": rank, "finalize": value, "size": comm.Get_size(), "world": usable}
    print(json.dumps(line), flush=True)


last = MPI.Comm.Create_keyval(delete_fn=at_finalize)
other = MPI.Comm.Create_keyval(delete_fn=at_finalize)
MPI.COMM_WORLD.Set_attr(last, "world")
MPI.COMM_SELF.Set_attr(other, "self set first")
MPI.COMM_SELF.Set_attr(last, "self set last")
MPI.Finalize()
sys.stdout.flush()
