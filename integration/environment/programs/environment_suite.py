"""The environment calls of MPI 4.1 in a 2-rank job, with MPI initialized by the program.

Each rank prints one JSON line of what it observed; the test compares them with what MPI says:

1. ``ompy.rc(initialize=False)`` before the import: MPI is not initialized until the program
   calls ``Init_thread``, which gives the level asked for (at most ``THREAD_SERIALIZED``);
2. ``get_vendor``, ``Get_version``, ``Get_library_version``, ``Pcontrol``,
   ``Get_hw_resource_info``;
3. buffered sends through a buffer attached to a duplicate of ``COMM_WORLD`` only: rank 0
   sends four small messages and one of rendezvous size.  Its ``Iflush_buffer`` cannot complete
   before rank 1 has posted the large receive (rank 1 waits at a barrier first), then does;
   ``Flush_buffer`` and ``Detach_buffer`` return with nothing pending.  ``COMM_WORLD``, which
   has no buffer of its own and the process none either, refuses a ``Bsend``;
4. rank 1 receives every message into memory from ``Alloc_mem`` and frees it with ``Free_mem``;
5. ``Finalize``, called by the program (``rc.finalize`` is None: as ``initialize``).
"""

from __future__ import annotations

import json

import numpy as np

import ompy.rc

ompy.rc(initialize=False)
from ompy import MPI  # noqa: E402

SMALL = 64  # doubles
LARGE = 1 << 19  # doubles: 4 MiB, far above every transport's eager limit

report: dict = {"initialized_at_import": MPI.Is_initialized()}
report["provided"] = MPI.Init_thread(MPI.THREAD_SERIALIZED)
world = MPI.COMM_WORLD
rank = report["rank"] = world.Get_rank()
report["size"] = world.Get_size()
report["vendor"] = MPI.get_vendor()
report["version"] = MPI.Get_version()
report["library"] = MPI.Get_library_version()
MPI.Pcontrol(0)
MPI.Pcontrol(1)
report["machine"] = MPI.Get_hw_resource_info().Get("hwloc://Machine")

comm = world.Dup()
if rank == 0:
    room = 4 * (SMALL * 8 + MPI.BSEND_OVERHEAD) + LARGE * 8 + MPI.BSEND_OVERHEAD
    attached = bytearray(room)
    comm.Attach_buffer(attached)
    for tag in range(4):
        comm.Bsend(np.full(SMALL, float(tag)), 1, tag)
    comm.Bsend(np.arange(LARGE, dtype=np.float64), 1, 9)
    flush = comm.Iflush_buffer()
    report["flushed_before_receive"] = flush.Test()
    world.Barrier()  # rank 1 posts the large receive after this
    flush.Wait()
    comm.Flush_buffer()
    report["detached_is_attached"] = comm.Detach_buffer() is attached
    try:
        world.Bsend(np.zeros(1), 1, 0)
    except MPI.Exception as error:
        report["world_bsend"] = error.Get_error_class() == MPI.ERR_BUFFER
else:
    world.Barrier()
    small = MPI.Alloc_mem(SMALL * 8)
    seen = []
    for tag in range(4):
        comm.Recv([small, MPI.DOUBLE], 0, tag)
        values = np.frombuffer(small, dtype=np.float64)
        seen.append(bool((values == float(tag)).all()))
    report["small"] = seen
    large = MPI.Alloc_mem(LARGE * 8)
    comm.Recv([large, MPI.DOUBLE], 0, 9)
    report["large"] = bool(np.array_equal(np.frombuffer(large, dtype=np.float64), np.arange(LARGE)))
    report["aligned"] = small.address % 4096 == 0 and large.address % 4096 == 0
    MPI.Free_mem(small)
    MPI.Free_mem(large)
    report["freed"] = (small.nbytes, large.address)
comm.Free()
MPI.Finalize()
report["finalized"] = MPI.Is_finalized()
print(json.dumps(report), flush=True)
