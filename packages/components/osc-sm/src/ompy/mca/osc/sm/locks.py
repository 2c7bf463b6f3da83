"""Byte-range locks on a window's segment file: passive-target locks and atomic accumulates.

A window needs two kinds of mutual exclusion between the processes of a node:

* **passive-target locks** (``Win.Lock``/``Lock_all``): shared or exclusive, held for a whole
  access epoch, possibly for a long time;
* **accumulate atomicity**: MPI requires ``Accumulate``, ``Get_accumulate``, ``Fetch_and_op``
  and ``Compare_and_swap`` to be atomic per element against each other, whoever issues them.

Python cannot issue the processor's atomic instructions on shared memory, so both are record
locks of the kernel on the segment's file (an fd opened while the name still existed), at byte
ranges chosen so that they never overlap: accumulates lock the target bytes they touch (so
accumulates to disjoint elements run in parallel), passive-target locks lock one byte per rank
*after* the end of the segment (a record lock may lie beyond end of file).  The kernel's lock
gives the acquire and release barriers the data needs, and a lock dies with its process, so a
crashed rank never leaves a window locked.

Linux's *open file description* locks (``F_OFD_SETLK``) are owned by the open file, not by the
process: each window of each rank opens the file itself, so two ranks simulated as threads of
one process exclude each other exactly as two processes do.  Elsewhere the classic POSIX record
lock is used; it is owned by the process, which is what MPI's process-level locks mean anyway.
Threads of one rank are additionally serialised by a ``threading.Lock`` around each accumulate
(a record lock never excludes its own owner).

Waiting never blocks in the kernel: a lock is tried without waiting, inside the progress
engine's ``wait_until``, so the messages the holder may be waiting for keep moving.
"""

from __future__ import annotations

import errno
import fcntl
import os
import struct
import sys
import threading

#: ``struct flock`` on 64-bit Linux: l_type, l_whence, l_start, l_len, l_pid (and padding).
_FLOCK = struct.Struct("hhqqi4x")
#: Whether open-file-description locks are available (Linux 3.15 and later), on a 64-bit
#: build whose ``struct flock`` has the layout above.
OFD = (
    sys.platform.startswith("linux")
    and hasattr(fcntl, "F_OFD_SETLK")
    and struct.calcsize("P") == 8
    and _FLOCK.size == 32
)
_BUSY = (errno.EAGAIN, errno.EACCES)


class RangeLocks:
    """Non-blocking shared/exclusive locks on byte ranges of one file, owned by one opener.

    ``path`` is the segment's file; it is opened here (so the name must still exist) and closed
    by :meth:`close`.  With POSIX record locks, closing *any* fd of the file in this process
    drops all of this process's locks on it, so nothing else in the process may open and close
    the file while this object lives (the segment mapping keeps no fd of its own open).
    """

    def __init__(self, path: str) -> None:
        self.fd: int | None = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        #: Serialises accumulates of the threads of this rank.
        self.local = threading.Lock()

    def _fcntl(self, kind: int, start: int, length: int) -> bool:
        fd = self.fd
        if fd is None:
            raise RuntimeError("the window's locks were closed (the window was freed)")
        try:
            if OFD:
                fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(kind, os.SEEK_SET, start, length, 0))
            else:
                flags = {fcntl.F_RDLCK: fcntl.LOCK_SH, fcntl.F_WRLCK: fcntl.LOCK_EX}.get(kind)
                if flags is None:
                    fcntl.lockf(fd, fcntl.LOCK_UN, length, start)
                else:
                    fcntl.lockf(fd, flags | fcntl.LOCK_NB, length, start)
        except OSError as error:
            if error.errno in _BUSY:
                return False
            raise
        return True

    def try_exclusive(self, start: int, length: int) -> bool:
        """Take an exclusive lock on ``length`` bytes at ``start`` if nobody holds any there."""
        return self._fcntl(fcntl.F_WRLCK, start, length)

    def try_shared(self, start: int, length: int) -> bool:
        """Take a shared lock on the range if nobody holds an exclusive one there."""
        return self._fcntl(fcntl.F_RDLCK, start, length)

    def release(self, start: int, length: int) -> None:
        """Release whatever this opener holds on the range."""
        self._fcntl(fcntl.F_UNLCK, start, length)

    def close(self) -> None:
        """Close the fd (which releases every lock it holds); idempotent."""
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)
