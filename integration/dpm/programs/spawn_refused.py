"""Spawn and connect calls that cannot succeed raise the same MPI error at every rank."""

import sys

from ompy import MPI

world = MPI.COMM_WORLD
names = {MPI.ERR_SPAWN: "ERR_SPAWN", MPI.ERR_PORT: "ERR_PORT"}


def attempt(label, call):
    try:
        call()
    except MPI.Exception as error:
        print(world.rank, label, names.get(error.Get_error_class(), error), flush=True)
    else:
        print(world.rank, label, "succeeded", flush=True)


info = MPI.Info.Create()
info.Set("host", "no-such-host")
attempt("missing-program", lambda: world.Spawn("/no/such/program", maxprocs=1))
attempt("unknown-host", lambda: world.Spawn(sys.executable, args=["-c", "0"], info=info))
attempt("no-port", lambda: world.Connect("ompy-port:999:nobody"))
attempt("maxprocs", lambda: world.Spawn(sys.executable, maxprocs=0 if world.rank == 0 else 1))
world.Barrier()
