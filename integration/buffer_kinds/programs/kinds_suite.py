"""Every buffer kind through ``ompy run`` with the real PML: sent, received, and let go.

Rank 0 and rank 1 exchange messages whose buffers are exported through the buffer protocol,
DLPack and the CUDA array interface (over host memory), in every point-to-point form (blocking,
nonblocking, synchronous, send-receive, persistent) and at sizes that take each protocol: eager,
rendezvous, and pipelined or RDMA (``get``) transfers; then non-contiguous messages of each
kind (a vector datatype, a strided export) through the convertor; and collectives (Bcast,
Ibcast, Allreduce, Allgather) with buffers of each kind.  After each operation the
exporter and the array behind it must be gone as soon as the program drops them: ompy holds no
reference past the call or the completed request (a persistent request holds it until freed).
No ``gc.collect()``: a reference cycle that only the collector frees would hold a message's memory
for an unknown time, so it counts as a leak here.

Rank 0 prints one JSON line: the checks both ranks passed.  A failed check raises, and ``ompy
run`` reports the failed rank.
"""

import json
import sys
import weakref

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
peer = 1 - rank
checks = []


class DLPackExporter:
    """DLPack 1.0 over a numpy array; no buffer protocol."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class CAIExporter:
    """``__cuda_array_interface__`` over a numpy array's host memory."""

    def __init__(self, array):
        self.array = array

    @property
    def __cuda_array_interface__(self):
        return {
            "data": (self.array.ctypes.data, False),
            "shape": self.array.shape,
            "strides": None if self.array.flags.c_contiguous else self.array.strides,
            "typestr": self.array.dtype.str,
            "version": 3,
        }


class DeviceExporter:
    """``__cuda_array_interface__`` with a pointer into no memory of this process."""

    __cuda_array_interface__ = {"data": (8, False), "shape": (4,), "typestr": "<f8", "version": 3}


KINDS = {
    "buffer": lambda array: array,
    "dlpack": DLPackExporter,
    "cai": CAIExporter,
}
#: Eager on sm and tcp; rendezvous on both; a long message (pipelined, or read by RDMA get).
SIZES = [8, 300_000, 4 << 20]


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"rank {rank}: {name} failed {detail}")
    checks.append(name)


def pattern(nbytes, who):
    return (np.arange(nbytes // 8, dtype=np.float64) + 1000.0 * who).astype(np.float64)


def exchange(kind, nbytes, form):
    """One message from rank 0 to rank 1 (and one back, for sendrecv); returns the weakrefs of
    this rank's exporters and arrays, all dropped by the time it returns."""
    make = KINDS[kind]
    mine = pattern(nbytes, rank)
    into = np.zeros(nbytes // 8)
    send_obj, recv_obj = make(mine), make(into)
    refs = [weakref.ref(send_obj), weakref.ref(recv_obj), weakref.ref(mine), weakref.ref(into)]
    expected = pattern(nbytes, peer)
    if form == "blocking":
        if rank == 0:
            comm.Send(send_obj, 1, 1)
        else:
            comm.Recv(recv_obj, 0, 1)
    elif form == "nonblocking":
        request = comm.Isend(send_obj, 1, 2) if rank == 0 else comm.Irecv(recv_obj, 0, 2)
        request.Wait()
        check(f"{kind}:{form}:null", request == MPI.REQUEST_NULL)
        del request
    elif form == "synchronous":
        if rank == 0:
            comm.Ssend(send_obj, 1, 3)
        else:
            comm.Recv(recv_obj, 0, 3)
    elif form == "sendrecv":
        comm.Sendrecv(send_obj, peer, 4, recv_obj, peer, 4)
    elif form == "waitall":
        requests = [comm.Irecv(recv_obj, peer, 5), comm.Isend(send_obj, peer, 5)]
        MPI.Request.Waitall(requests)
        del requests
    elif form == "persistent":
        request = comm.Send_init(send_obj, 1, 6) if rank == 0 else comm.Recv_init(recv_obj, 0, 6)
        for _ in range(2):
            request.Start()
            request.Wait()
        del send_obj, recv_obj, mine
        # What the request needs stays alive until Free: rank 0's sent memory (dropped here);
        # rank 1's exporter, except DLPack's, whose capsule holds the array and not its wrapper.
        if rank == 0:
            check(f"{kind}:{form}:kept", refs[2]() is not None)
        elif kind != "dlpack":
            check(f"{kind}:{form}:kept", refs[1]() is not None)
        request.Free()
        del request
    received = rank == 1 or form in ("sendrecv", "waitall")
    if received:
        check(f"{kind}:{form}:{nbytes}:data", np.array_equal(into, expected))
    return refs


def exchange_derived(kind, nbytes, form):
    """``nbytes`` of doubles as every other element of a buffer twice as large, described by a
    vector datatype (``form`` "vector") or by the strides of the exported array ("strided"):
    packed and unpacked through the convertor, fragment by fragment."""
    make = KINDS[kind]
    count = nbytes // 8
    memory = np.full(2 * count, -1.0)
    if rank == 0:
        memory[::2] = pattern(nbytes, 0)
    vector = MPI.DOUBLE.Create_vector(count, 1, 2).Commit()
    exporter = make(memory) if form == "vector" else make(memory[::2])
    message = [exporter, 1, vector] if form == "vector" else exporter
    refs = [weakref.ref(exporter), weakref.ref(memory)]
    if rank == 0:
        comm.Isend(message, 1, 7).Wait()
    else:
        comm.Recv(message, 0, 7)
        check(f"{kind}:{form}:{nbytes}:data", np.array_equal(memory[::2], pattern(nbytes, 0)))
        check(f"{kind}:{form}:{nbytes}:gaps", (memory[1::2] == -1.0).all())
    vector.Free()
    return refs


def collected(refs):
    return [i for i, ref in enumerate(refs) if ref() is not None]


for kind in KINDS:
    for form in ("blocking", "nonblocking", "synchronous", "sendrecv", "waitall", "persistent"):
        for nbytes in SIZES:
            refs = exchange(kind, nbytes, form)
            alive = collected(refs)
            check(f"{kind}:{form}:{nbytes}:released", not alive, f"still alive: {alive}")
            comm.Barrier()


def collective(kind, nbytes, form):
    """One collective of ``form`` with this rank's buffers exported as ``kind``."""
    make = KINDS[kind]
    mine = pattern(nbytes, rank)
    into = np.zeros(2 * (nbytes // 8))
    send_obj, recv_obj = make(mine), make(into)
    refs = [weakref.ref(send_obj), weakref.ref(recv_obj), weakref.ref(mine), weakref.ref(into)]
    if form == "bcast":
        comm.Bcast(send_obj, root=0)
        check(f"{kind}:{form}:{nbytes}:data", np.array_equal(mine, pattern(nbytes, 0)))
    elif form == "ibcast":
        comm.Ibcast(send_obj, root=1).Wait()
        check(f"{kind}:{form}:{nbytes}:data", np.array_equal(mine, pattern(nbytes, 1)))
    elif form == "allreduce":
        half = make(into[: nbytes // 8])
        comm.Allreduce(send_obj, half, op=MPI.SUM)
        del half
        total = pattern(nbytes, 0) + pattern(nbytes, 1)
        check(f"{kind}:{form}:{nbytes}:data", np.array_equal(into[: nbytes // 8], total))
    elif form == "allgather":
        comm.Allgather(send_obj, recv_obj)
        both = np.concatenate([pattern(nbytes, 0), pattern(nbytes, 1)])
        check(f"{kind}:{form}:{nbytes}:data", np.array_equal(into, both))
    return refs


for kind in KINDS:
    for form in ("bcast", "ibcast", "allreduce", "allgather"):
        for nbytes in SIZES:
            refs = collective(kind, nbytes, form)
            alive = collected(refs)
            check(f"{kind}:{form}:{nbytes}:released", not alive, f"still alive: {alive}")

for kind in KINDS:
    for form in ("vector", "strided"):
        for nbytes in SIZES:
            refs = exchange_derived(kind, nbytes, form)
            alive = collected(refs)
            check(f"{kind}:{form}:{nbytes}:released", not alive, f"still alive: {alive}")
            comm.Barrier()

# A device pointer is refused before anything is sent, on both sides.
for call in (lambda: comm.Send(DeviceExporter(), peer, 9), lambda: comm.Irecv(DeviceExporter())):
    try:
        call()
    except BufferError as error:
        check("device:refused", "device (GPU) memory" in str(error), str(error))
    else:
        raise AssertionError(f"rank {rank}: a device pointer was accepted")

everyone = comm.gather(sorted(set(checks)), root=0)
if rank == 0:
    print(json.dumps({"size": comm.Get_size(), "checks": everyone}))
sys.stdout.flush()
