"""Ports and published names between two spawned jobs of one launcher.

The first job (1 rank) spawns a server job and a client job.  The server job opens a port,
publishes it as 'ocean', tells its parent it did, and accepts; the client job (told to go by
the parent) looks the name up and connects.  They exchange data over the new
intercommunicator, disconnect, and the server job unpublishes and closes the port.
"""

import json
import sys

from ompy import MPI

role = sys.argv[1] if len(sys.argv) > 1 else "root"
world = MPI.COMM_WORLD
if role == "root":
    server = world.Spawn(sys.executable, args=[__file__, "server"], maxprocs=2)
    server.recv(source=0, tag=1)  # the name is published
    client = world.Spawn(sys.executable, args=[__file__, "client"], maxprocs=3)
    report = {"role": role, "done": [server.recv(source=0, tag=2), client.recv(source=0, tag=2)]}
    server.Disconnect()
    client.Disconnect()
    print(json.dumps(report), flush=True)
    sys.exit(0)
parent = MPI.Comm.Get_parent()
report = {"role": role, "rank": world.rank}
if role == "server":
    port = MPI.Open_port() if world.rank == 0 else None
    if world.rank == 0:
        MPI.Publish_name("ocean", port)
        parent.send("published", dest=0, tag=1)
    inter = world.Accept(port, root=0)
else:
    port = MPI.Lookup_name("ocean") if world.rank == 0 else ""
    inter = world.Connect(port, root=0)
report["remote_size"] = inter.Get_remote_size()
report["gathered"] = inter.allgather((role, world.rank))
if role == "server" and world.rank == 0:
    inter.send("ping", dest=2, tag=5)
    report["reply"] = inter.recv(source=2, tag=6)
if role == "client" and world.rank == 2:
    report["got"] = inter.recv(source=0, tag=5)
    inter.send("pong", dest=0, tag=6)
inter.Disconnect()
if role == "server" and world.rank == 0:
    MPI.Unpublish_name("ocean", port)
    MPI.Close_port(port)
    try:
        MPI.Lookup_name("ocean")
    except MPI.Exception as error:
        report["lookup_after"] = error.Get_error_class() == MPI.ERR_NAME
if world.rank == 0:
    parent.send(role, dest=0, tag=2)
parent.Disconnect()
print(json.dumps(report), flush=True)
