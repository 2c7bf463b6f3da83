"""``Comm.Psend_init`` and ``Comm.Precv_init``: partitioned point-to-point (MPI 4).

The buffer forms are mpi4py's, with its reading of the count: ``[buf, count, datatype]`` gives
the count *per partition* (MPI's ``count`` argument), so the message is ``partitions * count``
elements; a bare buffer (or ``[buf, datatype]``) is cut into ``partitions`` equal parts and must
hold a multiple of ``partitions`` elements.  ``PROC_NULL`` makes a request whose rounds move
nothing (its buffer is not read).  The protocol is :mod:`.partitions`.
"""

from __future__ import annotations

from typing import Any

from ..constants import ANY_SOURCE, ANY_TAG, PROC_NULL
from ..datatype.buffer import BufferSpec, parse_buffer
from ..datatype.datatype import Datatype
from ..errors import ERR_ARG
from ..errors import Exception as MPIException
from .checks import as_int, dest_rank, recv_tag, send_tag, source_rank
from .communicator import Communicator
from .info import INFO_NULL, Info, info_items
from .partitions import PartitionedRecv, PartitionedSend, check_no_wildcards
from .pickled import byte_spec
from .request import Prequest


def _per_partition(msg: Any, partitions: int) -> tuple[Any, bool]:
    """``msg`` with an explicit count scaled to the whole message; whether it had one."""
    if type(msg) is not list and type(msg) is not tuple:
        return msg, False
    items = list(msg)
    if len(items) == 2 and isinstance(items[1], Datatype | str):
        return msg, False
    if len(items) not in (2, 3, 4):
        return msg, False  # parse_buffer says what is wrong with it
    count = items[1]
    if type(count) is list or type(count) is tuple:
        if len(count) != 2 or count[0] is None:
            return msg, False
        items[1] = (as_int(count[0], "message: count") * partitions, count[1])
    elif count is None:
        return msg, False
    else:
        items[1] = as_int(count, "message: count") * partitions
    return items, True


def partitioned_spec(msg: Any, partitions: int, *, readonly: bool, call: str) -> BufferSpec:
    """The whole message of ``partitions`` equal partitions."""
    scaled, explicit = _per_partition(msg, partitions)
    spec = parse_buffer(scaled, readonly=readonly)
    if not explicit and spec.count % partitions:
        raise ValueError(
            f"{call}: cannot cut the message into partitions: its {spec.count} element(s) are "
            f"not a multiple of {partitions} partitions"
        )
    return spec


def _partitions(partitions: object, call: str) -> int:
    count = as_int(partitions, f"{call}: partitions")
    if count < 1:
        raise MPIException(ERR_ARG, f"{call}: partitions must be at least 1, got {count}")
    return count


class PartitionedComm:
    """The partitioned half of :class:`~.comm.Comm`."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    def Psend_init(
        self, buf: Any, partitions: int, dest: int, tag: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Create request for a partitioned send operation."""
        call = "Comm.Psend_init"
        c = self._live(call)
        count = _partitions(partitions, call)
        dest = dest_rank(dest, c.remote_size, call)
        tag = send_tag(tag, c.tag_ub, call)
        info_items(info, call)  # no hints are acted on; the type is checked
        if dest == PROC_NULL:
            spec = byte_spec(memoryview(b""))
        else:
            spec = partitioned_spec(buf, count, readonly=True, call=call)
        return Prequest._persistent(PartitionedSend(c, spec, count, dest, tag), c)

    def Precv_init(
        self,
        buf: Any,
        partitions: int,
        source: int = ANY_SOURCE,
        tag: int = ANY_TAG,
        info: Info = INFO_NULL,
    ) -> Prequest:
        """Create request for a partitioned recv operation."""
        call = "Comm.Precv_init"
        c = self._live(call)
        count = _partitions(partitions, call)
        source = source_rank(source, c.remote_size, call)
        tag = recv_tag(tag, c.tag_ub, call)
        check_no_wildcards(source, tag, call)
        info_items(info, call)
        if source == PROC_NULL:
            spec = byte_spec(memoryview(bytearray()))
        else:
            spec = partitioned_spec(buf, count, readonly=False, call=call)
        return Prequest._persistent(PartitionedRecv(c, spec, count, source, tag), c)
