"""Spawn_multiple with per-application arguments, counts and info (env, wdir), and Join.

Parent (1 rank): spawns 2 copies of app A and 1 of app B as one job; every child reports its
world rank, argv, the variable from its 'env' info and its working directory.  Then two of
the children join each other through a socket (Comm.Join) and exchange a message.
"""

import json
import os
import socket
import sys

from ompy import MPI

world = MPI.COMM_WORLD
parent = MPI.Comm.Get_parent()
if parent == MPI.COMM_NULL:
    wdir = sys.argv[1]
    env_a, env_b = MPI.Info.Create(), MPI.Info.Create()
    env_a.Set("env", "DPM_APP=a\nDPM_EXTRA=1")
    env_b.Set("env", "DPM_APP=b")
    env_b.Set("wdir", wdir)
    errcodes: list = []
    inter = world.Spawn_multiple(
        [sys.executable, sys.executable],
        args=[[__file__, "A"], [__file__, "B"]],
        maxprocs=[2, 1],
        info=[env_a, env_b],
        errcodes=errcodes,
    )
    print(json.dumps({"who": "parent", "remote": inter.Get_remote_size(), "errcodes": errcodes}))
    inter.Disconnect()
    sys.exit(0)

report = {
    "who": "child",
    "rank": world.rank,
    "size": world.size,
    "app": sys.argv[1],
    "env": os.environ.get("DPM_APP"),
    "cwd": os.getcwd(),
}
# Join: rank 0 listens, tells rank 1 where, both join over the connected socket.
if world.rank in (0, 1):
    pair = world.Split(0 if world.rank < 2 else MPI.UNDEFINED)
    if world.rank == 0:
        listener = socket.create_server(("127.0.0.1", 0))
        pair.send(listener.getsockname()[1], dest=1)
        sock, _ = listener.accept()
        listener.close()
    else:
        sock = socket.create_connection(("127.0.0.1", pair.recv(source=0)))
    joined = MPI.Comm.Join(sock.fileno())
    sock.close()
    report["joined"] = [joined.Get_size(), joined.Get_remote_size()]
    report["joined_got"] = joined.sendrecv(f"hi from {world.rank}", dest=0, source=0)
    joined.Disconnect()
    pair.Free()
else:
    world.Split(MPI.UNDEFINED)
parent.Disconnect()
print(json.dumps(report), flush=True)
