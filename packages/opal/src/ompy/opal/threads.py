"""Threads ompy starts for itself, told apart from the program's.

``MPI_THREAD_MULTIPLE`` switches a process to its locked variants only once a second thread
could call MPI (docs/architecture.md, "Threads").  ompy's own helper threads (the control
client's watcher, the fence that runs beside Init's progress, the launcher's control server)
never call MPI, so they must not count: each is an :class:`InternalThread`, which the switch
ignores, both among the threads that already exist and among the threads being started.
"""

from __future__ import annotations

import threading


class InternalThread(threading.Thread):
    """A thread of ompy's own that never calls MPI (it makes no MPI call, from any layer)."""
