"""A coll module's methods made from one algorithm (``ompy.ompi.mca.coll.base.methods``).

``blocking(schedule)`` runs the schedule in the caller, ``nonblocking(schedule)`` starts it and
returns its request, ``planned(recorder)`` records a plan once that each start replays; each
method is named after the algorithm in the coll interface's way (``x``, ``ix``, ``x_init``)
and carries its docstring.  Checked here with a shift along a ring on loopback worlds.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.mca.coll import CollModule
from ompy.ompi.mca.coll.base import blocking, nonblocking, planned, recv, send


def shift(comm, tag, out, into):
    """Each rank's bytes to the next rank, along a ring."""
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    yield (send(comm, out, right, tag), recv(comm, into, left, tag))


def shift_plan(b, out, into):
    """The plan of :func:`shift`."""
    comm = b.comm
    b.send(out, (comm.rank + 1) % comm.size)
    b.recv(into, (comm.rank - 1) % comm.size)
    b.wait()


#: The algorithms, reached as a component reaches its modules' (``rooted.bcast``).
ring = SimpleNamespace(shift=shift, shift_plan=shift_plan)


class ShiftModule(CollModule):
    shift = blocking(ring.shift)
    ishift = nonblocking(ring.shift)
    shift_init = planned(ring.shift_plan)


def test_each_form_is_named_as_the_coll_interface_names_it_and_keeps_the_docstring():
    assert (ShiftModule.shift.__name__, ShiftModule.ishift.__name__) == ("shift", "ishift")
    assert ShiftModule.shift_init.__name__ == "shift_plan_init"
    assert ShiftModule.shift.__doc__ == ShiftModule.ishift.__doc__ == shift.__doc__
    assert ShiftModule.shift_init.__doc__ == shift_plan.__doc__


@pytest.mark.parametrize("size", [1, 2, 3])
def test_the_three_forms_of_one_algorithm_move_the_same_data(size):
    def body(world):
        c, module = world._c, ShiftModule()
        mine = bytes([c.rank + 1]) * 4
        into = bytearray(4)
        module.shift(c, memoryview(mine), memoryview(into))
        results = [bytes(into)]
        into[:] = bytes(4)
        request = module.ishift(c, memoryview(mine), memoryview(into))
        c.engine.wait_for(request)
        results.append(bytes(into))
        persistent = module.shift_init(c, memoryview(mine), memoryview(into))
        for _ in range(2):
            into[:] = bytes(4)
            c.engine.wait_for(persistent.start())
            results.append(bytes(into))
        persistent.free()
        return results

    results = run_ranks(make_world(size), body, timeout=60)
    for rank, got in enumerate(results):
        assert got == [bytes([(rank - 1) % size + 1]) * 4] * 4
