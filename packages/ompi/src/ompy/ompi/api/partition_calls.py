"""``Prequest.Pready``, ``Pready_range``, ``Pready_list`` and ``Parrived``: the calls a program
makes on a partitioned request during a round (the protocol is :mod:`.partitions`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..errors import ERR_ARG, ERR_REQUEST
from ..errors import Exception as MPIException
from .partitions import PartitionedRecv, PartitionedSend, not_started, partition_index


class PartitionedOps:
    """``Prequest.Pready``, ``Pready_range``, ``Pready_list`` and ``Parrived``.

    A persistent request is partitioned when its starter is a :class:`PartitionedSend` or
    :class:`PartitionedRecv`; its current round is the request's operation (``_core``).
    """

    __slots__ = ()

    _core: Any  # provided by Request
    _starter: Any  # provided by Prequest

    def _partitioned(self, call: str, kind: str) -> tuple[Any, Any]:
        state = self._starter
        if not isinstance(state, PartitionedSend | PartitionedRecv):
            what = "REQUEST_NULL" if state is None else "not a partitioned request"
            raise MPIException(ERR_REQUEST, f"{call}: the request is {what}")
        if state.kind != kind:
            raise MPIException(
                ERR_REQUEST,
                f"{call}: the request is a partitioned {state.kind}; "
                f"{call.rsplit('.', maxsplit=1)[-1]} is for partitioned {kind}s",
            )
        return state, self._core

    def _ready(self, call: str, partitions: Iterable[object]) -> None:
        state, round_ = self._partitioned(call, "send")
        if round_ is None:
            raise not_started(call)
        engine = state.comm.engine
        if engine.threaded:
            with engine.lock:
                state.mark_ready(round_, partitions, call)
        else:
            state.mark_ready(round_, partitions, call)

    def Pready(self, partition: int) -> None:
        """Mark a given partition as ready."""
        self._ready("Prequest.Pready", (partition,))

    def Pready_range(self, partition_low: int, partition_high: int) -> None:
        """Mark a range of partitions as ready."""
        call = "Prequest.Pready_range"
        state, _round = self._partitioned(call, "send")
        low = partition_index(partition_low, state.partitions, f"{call}: low")
        high = partition_index(partition_high, state.partitions, f"{call}: high")
        if high < low:
            raise MPIException(
                ERR_ARG, f"{call}: the range {low}..{high} is empty (high is below low)"
            )
        self._ready(call, range(low, high + 1))

    def Pready_list(self, partitions: Iterable[int]) -> None:
        """Mark a sequence of partitions as ready."""
        try:
            listed = list(partitions)
        except TypeError:
            raise TypeError(
                "Prequest.Pready_list: expecting a sequence of partition numbers, not "
                f"{type(partitions).__name__}"
            ) from None
        self._ready("Prequest.Pready_list", listed)

    def Parrived(self, partition: int) -> bool:
        """Test partial completion of a partitioned receive operation."""
        call = "Prequest.Parrived"
        if self._starter is None:
            return True  # MPI: a null request has nothing left to arrive
        state, round_ = self._partitioned(call, "receive")
        index = partition_index(partition, state.partitions, call)
        if round_ is None:
            return True  # inactive: the last round's data is all there
        if round_.exception is not None:
            raise round_.exception
        if state.arrived(round_, index):
            return True
        state.comm.engine.progress()  # MPI: a test that says no must make progress
        if round_.exception is not None:
            raise round_.exception
        return state.arrived(round_, index)
