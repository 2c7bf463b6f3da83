"""Error handlers, error classes and Info in a launched job; each rank prints a JSON report.

1. ERRORS_RETURN (the default): a receive too small for its message raises MPI.Exception whose
   class is ERR_TRUNCATE, on a communicator made by Dup_with_info.
2. A user handler on a Dup of COMM_WORLD is called with (that communicator, ERR_RANK) when a
   send names a rank that does not exist; the call still raises MPI.Exception.
3. Info hints round trip: Dup_with_info / Get_info / Set_info / Dup, identical on every rank
   (rank 0 broadcasts its view, every rank compares).
4. Error classes added with Add_error_class/Add_error_code/Add_error_string are seen by
   Get_error_class/Get_error_string, LASTUSEDCODE and a user handler called with the code.
5. INFO_ENV reports maxprocs and the thread level this job provides.
6. A session made with a user handler (created before the session) calls it with
   (that session, ERR_ARG) when asked for a process set that does not exist.
"""

import json

import numpy as np

from ompy import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
report = {"rank": rank}

# 1 + 3. Info round trips, and the default handler on a communicator made with hints.
hints = MPI.Info.Create({"mpi_assert_no_any_tag": "true", "ompy_rank_free": "x"})
comm = world.Dup_with_info(hints)
hints.Free()
comm.Set_info(MPI.Info.Create({"mpi_assert_exact_length": "true"}))
seen = comm.Get_info().items()
dup_seen = comm.Dup().Get_info().items()
report["hints"] = seen
report["hints_same_everywhere"] = comm.bcast(seen, root=0) == seen and dup_seen == seen
report["errhandler_is_return"] = comm.Get_errhandler() == MPI.ERRORS_RETURN
peer = (rank + 1) % size
source = (rank - 1) % size
request = comm.Isend(np.arange(4, dtype="i8"), peer, 5)
try:
    comm.Recv(np.zeros(2, dtype="i8"), source, 5)
    report["truncate"] = None
except MPI.Exception as error:
    report["truncate"] = [error.Get_error_class(), error == MPI.ERR_TRUNCATE]
request.Wait()

# 2. A user handler.
calls = []


def handler(c, code):
    calls.append([c == watched, code, c.Get_size()])


watched = world.Dup()
watched.Set_errhandler(MPI.Comm.Create_errhandler(handler))
try:
    watched.Send(np.zeros(1), size + 3)
    report["user_raised"] = False
except MPI.Exception as error:
    report["user_raised"] = error.Get_error_class() == MPI.ERR_RANK
report["user_calls"] = calls[:]

# 4. Error classes of the program's own.
errclass = MPI.Add_error_class()
code = MPI.Add_error_code(errclass)
MPI.Add_error_string(code, f"library failure on rank {rank}")
watched.Call_errhandler(code)
report["added"] = [
    errclass > MPI.ERR_LASTCODE,
    world.Get_attr(MPI.LASTUSEDCODE) == code,
    MPI.Get_error_class(code) == errclass,
    MPI.Get_error_string(code),
    calls[-1][1] == code,
]

# 5. INFO_ENV.
levels = ("SINGLE", "FUNNELED", "SERIALIZED", "MULTIPLE")
provided = {getattr(MPI, f"THREAD_{name}"): f"MPI_THREAD_{name}" for name in levels}
report["env"] = [
    MPI.INFO_ENV.Get("maxprocs"),
    MPI.INFO_ENV.Get("thread_level") == provided[MPI.Query_thread()],
]

# 6. A session's handler.
session_calls = []
session_handler = MPI.Session.Create_errhandler(
    lambda s, code: session_calls.append([type(s).__name__, code])
)
session = MPI.Session.Init(errhandler=session_handler)
try:
    session.Get_nth_pset(99)
except MPI.Exception as error:
    session_calls.append(error.Get_error_class())
report["session"] = [session.Get_errhandler() == session_handler, *session_calls]
session.Finalize()

watched.Free()
comm.Free()
print(json.dumps(report), flush=True)
