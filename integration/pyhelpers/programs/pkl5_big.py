"""``ompy.util.pkl5`` with one object beyond 2 GiB (a count that does not fit a C ``int``).

Rank 0 sends rank 1 a ``uint8`` array of 2**31 + 4099 bytes whose every 4096th byte is marked;
rank 1 receives it through ``mprobe`` (so the probed byte count is checked too) and checks
length, marks and a sample of the rest.  Prints ``big ok`` on rank 1.
"""

import numpy as np

from ompy import MPI
from ompy.util import pkl5

comm = pkl5.Intracomm(MPI.COMM_WORLD)
n = 2**31 + 4099
if comm.rank == 0:
    array = np.zeros(n, dtype=np.uint8)
    array[::4096] = 7
    comm.send(array, 1, 11)
    del array
elif comm.rank == 1:
    status = MPI.Status()
    message = comm.mprobe(0, 11, status)
    assert status.Get_count(MPI.BYTE) > n, status.Get_count(MPI.BYTE)
    got = message.recv()
    assert got.dtype == np.uint8 and got.shape == (n,), (got.dtype, got.shape)
    assert np.count_nonzero(got) == len(range(0, n, 4096))
    assert (got[::4096] == 7).all()
    print("big ok", flush=True)
comm.Barrier()
