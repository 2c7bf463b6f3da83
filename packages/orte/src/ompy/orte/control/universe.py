"""What the jobs of one launcher share: process names, ports, rendezvous and published names.

``ompy run`` starts one job; ``Comm.Spawn`` makes it start more.  Every job has its own control
server (its own modex, fences and life-cycle), but processes of different jobs must be able to
name each other, find each other's contact data and meet.  A :class:`Universe` holds that, once
per launcher, for all its control servers:

* **Process names.**  Each job gets a block of *universe ranks*: the first job ``0..n-1``, a
  job spawned next ``n..n+m-1``, and so on.  A universe rank names one process among all the
  launcher's jobs, as Open MPI's ``(jobid, vpid)`` pair does; a process's transports address
  their peers by it (its world rank plus its job's ``base``), so a world rank and a process of
  another job never collide.  For the first job the two numberings are the same.
* **Cross-job modex.**  ``get`` for a universe rank outside the asking job is answered from
  the store of the job that owns it (:meth:`lookup`).
* **Ports** (``Open_port``): names handed out here; only an open port can be met on.
* **Rendezvous** (:meth:`meet`): two sides (``accept`` and ``connect``) each bring a value
  under one key and each gets the other's; ``Accept``/``Connect`` exchange their groups'
  process names this way, then agree on a context id over further keys.
* **Published names** (``Publish_name``/``Lookup_name``/``Unpublish_name``).

Every control server runs its own thread, so the universe is shared across threads: every
method takes the lock, and an answer to a rank of another server is delivered by the
``answer`` callback that server registered with the waiting request (it posts to its loop).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import attrs

from .errors import ModexKeyError, NameLookupError, PortError, RequestError, ServiceError
from .store import ModexStore

#: How a waiting request is answered: ``answer(value, error)`` with one of them None.
Answer = Callable[[Any, "Exception | None"], None]
SIDES = ("accept", "connect")
PORT_PREFIX = "ompy-port:"


@attrs.define
class _Job:
    jobid: str
    base: int
    size: int
    store: ModexStore


@attrs.define
class _Waiter:
    side: str
    value: Any
    answer: Answer
    #: The job of the waiting rank (its requests are dropped if the job ends).
    jobid: str


class Universe:
    """The launcher-wide tables of the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self._next_base = 0
        self._ports: dict[str, str] = {}  # port name -> jobid that opened it
        self._port_ids = itertools.count(1)
        self._waiting: dict[str, _Waiter] = {}
        self._names: dict[str, str] = {}  # service name -> port name

    # -- jobs and process names ----------------------------------------------------------------

    def add_job(self, jobid: str, size: int, store: ModexStore) -> int:
        """Register a job's modex store; returns the job's base (its first universe rank)."""
        with self._lock:
            if jobid in self._jobs:
                raise ValueError(f"job {jobid} is already part of the universe")
            base = self._next_base
            self._jobs[jobid] = _Job(jobid, base, size, store)
            self._next_base += size
            return base

    def reserve(self, size: int) -> int:
        """The base the next job of ``size`` ranks will get (registered by :meth:`add_job`)."""
        with self._lock:
            return self._next_base

    @property
    def size(self) -> int:
        """How many universe ranks were handed out."""
        with self._lock:
            return self._next_base

    def job_of(self, universe_rank: int) -> tuple[str, int]:
        """``(jobid, world rank)`` of a universe rank; ``RequestError`` if no job has it."""
        with self._lock:
            for job in self._jobs.values():
                if job.base <= universe_rank < job.base + job.size:
                    return job.jobid, universe_rank - job.base
        raise RequestError(f"universe rank {universe_rank} belongs to no job of this launcher")

    def lookup(self, universe_rank: int, key: str) -> Any:
        """What that process committed under ``key`` (``ModexKeyError`` naming it if nothing)."""
        jobid, rank = self.job_of(universe_rank)
        with self._lock:
            store = self._jobs[jobid].store
        try:
            return store.lookup(rank, key)
        except ModexKeyError:
            raise ModexKeyError(universe_rank, key) from None

    # -- ports ---------------------------------------------------------------------------------

    def open_port(self, jobid: str) -> str:
        with self._lock:
            name = f"{PORT_PREFIX}{next(self._port_ids)}:{jobid}"
            self._ports[name] = jobid
            return name

    def close_port(self, name: str) -> None:
        """Close an open port; whoever waits on it is told it closed."""
        with self._lock:
            if name not in self._ports:
                raise PortError(f"port {name!r} is not open (Close_port)")
            del self._ports[name]
            stranded = [k for k in self._waiting if k == name or k.startswith(f"{name}#")]
            waiters = [self._waiting.pop(key) for key in stranded]
        for waiter in waiters:
            waiter.answer(None, PortError(f"port {name!r} was closed while waiting on it"))

    def port_is_open(self, name: str) -> bool:
        with self._lock:
            return name in self._ports

    # -- rendezvous ----------------------------------------------------------------------------

    def meet(self, key: str, side: str, value: Any, jobid: str, answer: Answer) -> None:
        """Bring ``value`` to ``key`` as ``side``; ``answer`` gets the other side's value.

        The first exchange of a connection names an open port (``connect`` to a port nobody
        opened is refused at once, ``MPI_ERR_PORT``'s case); later ones name
        ``<port>#<link>/<step>`` keys of a connection already made.
        """
        if side not in SIDES:
            raise RequestError(f"a rendezvous side is 'accept' or 'connect', not {side!r}")
        with self._lock:
            port = key.split("#", 1)[0]
            if port not in self._ports:
                raise PortError(f"port {port!r} is not open (no Open_port gave it)")
            other = self._waiting.get(key)
            if other is None:
                self._waiting[key] = _Waiter(side, value, answer, jobid)
                return
            if other.side == side:
                raise RequestError(
                    f"two '{side}' calls met on {key!r}: one side must accept, the other connect"
                )
            del self._waiting[key]
        other.answer(value, None)
        answer(other.value, None)

    def waiting(self, key: str) -> str | None:
        """The side waiting under ``key``, if one is (diagnostics and tests)."""
        with self._lock:
            waiter = self._waiting.get(key)
            return None if waiter is None else waiter.side

    def forget_job(self, jobid: str, why: str) -> None:
        """A job ended: fail the rendezvous its ranks wait in, close its ports and names."""
        with self._lock:
            waiting = [key for key, w in self._waiting.items() if w.jobid == jobid]
            stranded = [self._waiting.pop(key) for key in waiting]
            for name in [n for n, owner in self._ports.items() if owner == jobid]:
                del self._ports[name]
            for service in [s for s, port in self._names.items() if port not in self._ports]:
                del self._names[service]
        for waiter in stranded:
            waiter.answer(None, PortError(why))

    # -- published names -----------------------------------------------------------------------

    def publish(self, service: str, port: str) -> None:
        with self._lock:
            if service in self._names:
                raise ServiceError(f"the service name {service!r} is already published")
            self._names[service] = port

    def unpublish(self, service: str, port: str) -> None:
        with self._lock:
            published = self._names.get(service)
            if published is None:
                raise ServiceError(f"the service name {service!r} is not published")
            if published != port:
                raise ServiceError(
                    f"the service name {service!r} is published for port {published!r}, "
                    f"not {port!r}"
                )
            del self._names[service]

    def lookup_name(self, service: str) -> str:
        with self._lock:
            port = self._names.get(service)
        if port is None:
            raise NameLookupError(f"the service name {service!r} is not published")
        return port
