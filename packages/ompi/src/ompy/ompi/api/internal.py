"""The API layer's own collectives, on point-to-point with reserved negative tags.

Communicator creation needs a few collectives (an allgather of colors and keys, agreement on a
context id) before the coll framework exists for the new communicator, and the benchmarks need
a barrier.  These run on the parent communicator's PML with tags from :mod:`.tags`, which no
user receive can match.  MPI requires every member to call collectives on a communicator in
the same order, and messages between two ranks on one tag do not overtake one another, so one
tag per kind of collective is enough.  They are small-message algorithms: a dissemination
barrier and a gather to rank 0 followed by a binomial broadcast.
"""

from __future__ import annotations

import pickle
from typing import Any

from ..errors import ERR_INTERN
from ..errors import Exception as MPIException
from ..mca.pml.interface import PmlRequest
from .communicator import Communicator
from .pickled import byte_spec
from .tags import TAG_BARRIER, TAG_GATHER, TAG_SCATTER
from .transfers import STANDARD, raise_if_failed, wait

_EMPTY = memoryview(b"")


def _send(
    comm: Communicator, data: bytes | bytearray | memoryview, dest: int, tag: int
) -> PmlRequest:
    return comm.pml.isend(byte_spec(memoryview(data)), dest, tag, comm, STANDARD)


def _recv(comm: Communicator, source: int, tag: int) -> memoryview:
    """Receive a message of unknown size from ``source`` (a receive sized by the PML)."""
    request = comm.pml.irecv_view(None, source, tag, comm)
    wait(comm, request)
    raise_if_failed(request)
    if request.view is None:
        raise MPIException(ERR_INTERN, "the PML completed a sized receive without its data")
    return request.view


def _wait_all(comm: Communicator, requests: list[PmlRequest]) -> None:
    for request in requests:
        wait(comm, request)
        raise_if_failed(request)


def barrier(comm: Communicator) -> None:
    """Dissemination barrier: ceil(log2 size) rounds of empty messages."""
    size, rank = comm.size, comm.rank
    distance = 1
    while distance < size:
        send = _send(comm, _EMPTY, (rank + distance) % size, TAG_BARRIER)
        _recv(comm, (rank - distance) % size, TAG_BARRIER)
        wait(comm, send)
        raise_if_failed(send)
        distance *= 2


def bcast_bytes(comm: Communicator, data: bytes | None, root: int = 0) -> bytes | memoryview:
    """Binomial-tree broadcast of bytes from ``root`` (``data`` is None on the others)."""
    size = comm.size
    relative = (comm.rank - root) % size
    payload: bytes | memoryview | None = data
    mask = 1
    while mask < size:  # receive from the parent
        if relative & mask:
            payload = _recv(comm, (comm.rank - mask) % size, TAG_SCATTER)
            break
        mask <<= 1
    if payload is None:
        raise ValueError("bcast_bytes: the root must give the bytes to broadcast")
    mask >>= 1
    sends = []
    while mask > 0:  # forward to the children
        if relative + mask < size:
            sends.append(_send(comm, payload, (comm.rank + mask) % size, TAG_SCATTER))
        mask >>= 1
    _wait_all(comm, sends)
    return payload


def allgather(comm: Communicator, value: Any) -> list[Any]:
    """Every member's ``value`` (picklable), in rank order, on every member."""
    if comm.size == 1:
        return [value]
    if comm.rank != 0:
        send = _send(comm, pickle.dumps(value), 0, TAG_GATHER)
        wait(comm, send)
        raise_if_failed(send)
        return pickle.loads(bcast_bytes(comm, None))
    values = [value] + [pickle.loads(_recv(comm, peer, TAG_GATHER)) for peer in range(1, comm.size)]
    bcast_bytes(comm, pickle.dumps(values))
    return values
