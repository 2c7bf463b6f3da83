"""The persistent collectives are one table (``api.persistent_collectives.persistent``): each
``X_init`` takes ``X``'s arguments, read by the same argument reader, then ``info``.

These tests pin what that promises a user: the signature of every ``X_init`` on
``Intracomm``, ``Intercomm`` and ``Topocomm`` is its collective's with ``info=INFO_NULL``
after it (mpi4py's), ``info`` may be passed by position or by name, a wrong call is a
``TypeError`` naming the method, and an init's arguments are checked as its collective's are.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from ompy import MPI
from ompy.ompi.api.testing import make_world, run_ranks

INTRA = [
    "Barrier",
    "Bcast",
    "Gather",
    "Gatherv",
    "Scatter",
    "Scatterv",
    "Allgather",
    "Allgatherv",
    "Alltoall",
    "Alltoallv",
    "Alltoallw",
    "Reduce",
    "Allreduce",
    "Reduce_scatter_block",
    "Reduce_scatter",
    "Scan",
    "Exscan",
]
INTER = [name for name in INTRA if name not in ("Scan", "Exscan")]
NEIGHBOR = [
    "Neighbor_allgather",
    "Neighbor_allgatherv",
    "Neighbor_alltoall",
    "Neighbor_alltoallv",
    "Neighbor_alltoallw",
]
CASES = (
    [(MPI.Intracomm, name) for name in INTRA]
    + [(MPI.Intercomm, name) for name in INTER]
    + [(MPI.Topocomm, name) for name in NEIGHBOR]
)


@pytest.mark.parametrize(("cls", "name"), CASES, ids=lambda v: getattr(v, "__name__", v))
def test_every_init_takes_its_collectives_arguments_then_info(cls, name):
    collective = inspect.signature(getattr(cls, name))
    init = inspect.signature(getattr(cls, name + "_init"))
    *arguments, info = init.parameters.values()
    assert [p.name for p in arguments][1:] == list(collective.parameters)[1:]
    assert [p.default for p in arguments][1:] == [
        p.default for p in collective.parameters.values()
    ][1:]
    assert (info.name, info.default, info.kind) == (
        "info",
        MPI.INFO_NULL,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )
    assert init.return_annotation == "Prequest"
    method = getattr(cls, name + "_init")
    assert method.__name__ == name + "_init"
    assert method.__doc__.startswith("Persistent")


def test_info_by_position_or_by_name_and_wrong_calls_are_type_errors():
    def body(comm):
        data = np.arange(3.0) if comm.Get_rank() == 0 else np.zeros(3)
        info = MPI.Info.Create({"note": "ignored"})
        by_position = comm.Bcast_init(data, 0, info)
        by_name = comm.Bcast_init(buf=data, root=0, info=info)
        info.Free()
        seen = []
        for request in (by_position, by_name):
            request.Start()
            request.Wait()
            seen.append(data.tolist())
            request.Free()
        with pytest.raises(TypeError, match="positional argument"):
            comm.Bcast_init(data, 0, MPI.INFO_NULL, "extra")
        with pytest.raises(TypeError, match="unexpected keyword argument 'rot'"):
            comm.Bcast_init(data, rot=0)
        with pytest.raises(TypeError, match=r"Comm\.Bcast_init: info must be an Info"):
            comm.Bcast_init(data, 0, {"note": "a dict is not an Info"})
        with pytest.raises(MPI.Exception, match=r"Comm\.Gather_init: root 7"):
            comm.Gather_init(data, np.zeros(6), root=7)
        barrier = comm.Barrier_init(MPI.INFO_NULL)
        barrier.Start()
        barrier.Wait()
        barrier.Free()
        return seen

    assert run_ranks(make_world(2), body, timeout=60) == [[[0.0, 1.0, 2.0]] * 2] * 2
