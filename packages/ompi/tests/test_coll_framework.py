"""The coll framework: per-communicator tables, fallback per operation, tags and schedules.

Throw-away components installed for each test (as ``pip install`` would leave them) stand in
for real ones, so these tests hold whatever coll components are installed: each test opens the
framework with an include list naming only the fixture components.
"""

import sys
import textwrap

import numpy as np
import pytest

from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.errors import ERR_OTHER, ERR_TRUNCATE, ERR_UNSUPPORTED_OPERATION
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.coll import (
    BLOCKING,
    INTERFACE_VERSION,
    NEIGHBOR_BLOCKING,
    NEIGHBOR_OBJECT_OPERATIONS,
    NONBLOCKING,
    OBJECT_OPERATIONS,
    OPERATIONS,
    PERSISTENT,
    CollComponent,
    CollModule,
    base,
    framework,
)
from ompy.ompi.mca.coll.base import CollSelection
from ompy.ompi.mca.coll.interface import SIGNATURES
from ompy.opal.mca import Cardinality, ComponentLoadError
from ompy.opal.mca.entry_points import forget as forget_entry_points
from ompy.opal.mca.params import Registry

COMPONENTS = """
from ompy.ompi.mca.coll import CollComponent, CollModule
from ompy.ompi.mca.coll.base import CollSelection, recv, run_schedule, send, start_schedule
from ompy.opal.mca import Offer

EVENTS = []


def ring(comm, tag, value):
    # Pass one byte around the ring: every rank ends with its left neighbour's value.
    out = bytearray([value])
    into = bytearray(1)
    right, left = (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size
    yield [send(comm, memoryview(out), right, tag), recv(comm, memoryview(into), left, tag)]
    EVENTS.append(("ring", comm.rank, into[0]))


class FastModule(CollModule):
    def enable(self, comm):
        EVENTS.append(("enable", "fast", comm.context_id))

    def disable(self, comm):
        EVENTS.append(("disable", "fast", comm.context_id))

    def allreduce(self, comm, sendspec, recvspec, op):
        EVENTS.append(("fast", "allreduce"))

    def ibarrier(self, comm):
        return start_schedule(comm, ring, 7)

    def barrier(self, comm):
        EVENTS.append(("fast", "barrier"))


class RefModule(CollModule):
    def enable(self, comm):
        EVENTS.append(("enable", "ref", comm.context_id))

    def disable(self, comm):
        EVENTS.append(("disable", "ref", comm.context_id))

    def barrier(self, comm):
        EVENTS.append(("ref", "barrier"))

    def bcast(self, comm, spec, root):
        run_schedule(comm, ring, root)

    def igather(self, comm, sendspec, recvspec, root):
        return start_schedule(comm, ring, root)

    def iallreduce(self, comm, sendspec, recvspec, op):
        return start_schedule(comm, ring, 1)


class Fast(CollComponent):
    name = "fast"
    version = "1.0"

    def close(self):
        EVENTS.append(("close", "fast"))
    default_priority = 50

    def query(self, context):
        return Offer(self.priority, FastModule())


class Ref(CollComponent):
    name = "ref"
    version = "1.0"

    def close(self):
        EVENTS.append(("close", "ref"))
    default_priority = 10

    def query(self, context):
        return Offer(self.priority, RefModule())


class Worldonly(CollComponent):
    name = "worldonly"
    version = "1.0"

    def close(self):
        EVENTS.append(("close", "worldonly"))
    default_priority = 90

    def query(self, context):
        if context.context_id != 0:
            return None
        return Offer(self.priority, UnusedModule())


class UnusedModule(CollModule):
    # Implements nothing the others do not do better: it must be dropped, never enabled.
    def enable(self, comm):
        EVENTS.append(("enable", "worldonly", comm.context_id))


class Grumpy(CollComponent):
    name = "grumpy"
    version = "1.0"

    def query(self, context):
        raise RuntimeError("no collectives today")
"""

ENTRY_POINTS = """
[ompy.mca.coll]
fast = coll_fixture_components:Fast
ref = coll_fixture_components:Ref
worldonly = coll_fixture_components:Worldonly
grumpy = coll_fixture_components:Grumpy
"""


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """The fixture components on ``sys.path`` (each loopback world opens its own framework)."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "coll_fixture_components.py").write_text(textwrap.dedent(COMPONENTS))
    info = root / "coll_fixture-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: coll-fixture\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS.lstrip())
    monkeypatch.syspath_prepend(str(root))
    forget_entry_points()
    yield sys.modules
    forget_entry_points()
    sys.modules.pop("coll_fixture_components", None)


def open_with(coll: str = "fast,ref,worldonly", **settings: str) -> Registry:
    """The registry of a loopback world whose coll framework runs with these settings."""
    environ = {"OMPY_MCA_coll": coll}
    environ.update({f"OMPY_MCA_{name}": value for name, value in settings.items()})
    return Registry(environ=environ, files=[])


def events():
    return sys.modules["coll_fixture_components"].EVENTS


def table(world):
    return world._c.coll


# -- the framework description -----------------------------------------------------------------


def test_the_coll_framework_keeps_every_component_that_offers():
    assert framework.name == "coll"
    assert framework.layer == "ompi"
    assert framework.group == "ompy.mca.coll"
    assert framework.cardinality is Cardinality.MANY
    assert framework.interface_version == INTERFACE_VERSION == (1, 0)
    assert len(BLOCKING) == len(NONBLOCKING) == 17 + len(NEIGHBOR_BLOCKING)
    assert set(NEIGHBOR_BLOCKING) <= set(BLOCKING)
    assert set(NEIGHBOR_OBJECT_OPERATIONS) <= set(OBJECT_OPERATIONS)
    assert set(OPERATIONS) == set(BLOCKING) | {"i" + name for name in BLOCKING} | set(
        OBJECT_OPERATIONS
    ) | set(PERSISTENT)
    assert all(name.endswith("_object") for name in OBJECT_OPERATIONS)
    assert tuple(name + "_init" for name in BLOCKING) == PERSISTENT
    assert all(name in SIGNATURES for name in OPERATIONS)


def test_a_component_base_declines_and_a_module_implements_what_it_defines():
    class Plain(CollComponent):
        name = "plain"
        version = "1.0"

    class OnlyBcast(CollModule):
        def bcast(self, comm, spec, root):
            pass

    assert Plain(Registry(environ={}, files=[])).query(None) is None
    module = OnlyBcast()
    assert module.implements("bcast")
    assert not module.implements("ibcast")
    assert not module.implements("barrier")


# -- the table ------------------------------------------------------------------------------------


def test_each_operation_comes_from_the_best_module_that_implements_it(installed):
    (world,) = make_world(1, registry=open_with())
    providers = table(world).providers
    assert table(world).provider("allreduce") == "fast"  # fast (50) over ref (10)
    assert table(world).provider("barrier") == "fast"
    assert table(world).provider("iallreduce") == "ref"  # only ref implements it
    assert table(world).provider("bcast") == "ref"
    # A blocking operation nobody implements is served by the best nonblocking one.
    assert table(world).provider("gather") == "ref"
    assert providers["gather"].through_nonblocking
    assert not providers["bcast"].through_nonblocking
    # Nobody implements it in any form.
    assert table(world).provider("alltoallw") is None


def test_a_blocking_operation_through_a_nonblocking_one_waits_for_it(installed):
    worlds = make_world(3, registry=open_with())
    run_ranks(worlds, lambda w: table(w).gather(w._c, None, None, 0))
    assert sorted(e for e in events() if e[0] == "ring") == [("ring", r, 0) for r in range(3)]


def test_an_operation_nobody_implements_fails_clearly(installed):
    (world,) = make_world(1, registry=open_with())
    with pytest.raises(MPIException) as caught:
        world.Alltoallw([np.zeros(1), [1], [0], ["d"]], [np.zeros(1), [1], [0], ["d"]])
    assert caught.value.Get_error_class() == ERR_UNSUPPORTED_OPERATION
    assert "no coll component implements alltoallw" in str(caught.value)
    assert "running on it: worldonly, fast, ref" in str(caught.value)
    assert "install ompy-coll-basic" in str(caught.value)


def test_the_priority_parameter_reorders_the_table(installed):
    (world,) = make_world(1, registry=open_with(coll_ref_priority="80"))
    assert table(world).provider("barrier") == "ref"
    assert table(world).provider("allreduce") == "fast"  # ref has no allreduce at any priority


def test_a_negative_priority_or_an_exclusion_takes_a_component_out(installed):
    (world,) = make_world(1, registry=open_with(coll_fast_priority="-1"))
    assert table(world).provider("barrier") == "ref"
    assert table(world).provider("allreduce") == "ref"  # now through ref's iallreduce
    assert table(world).providers["allreduce"].through_nonblocking
    (world,) = make_world(1, registry=open_with(coll="ref,worldonly"))
    assert table(world).provider("barrier") == "ref"
    assert "fast" not in {name for name, _ in table(world).modules}


def test_modules_are_enabled_on_creation_and_disabled_when_freed(installed):
    worlds = make_world(2, registry=open_with())
    created = [e for e in events() if e[0] == "enable"]
    # Two processes, COMM_WORLD each; worldonly offered but serves nothing: never enabled.
    assert sorted(created) == sorted([("enable", "fast", 0), ("enable", "ref", 0)] * 2)

    def dup_and_free(world):
        dup = world.Dup()
        cid = dup._c.context_id
        assert table(dup).provider("barrier") == "fast"
        dup.Free()
        return cid

    cid = run_ranks(worlds, dup_and_free)[0]
    assert events().count(("disable", "fast", cid)) == 2
    assert events().count(("disable", "ref", cid)) == 2
    assert ("enable", "worldonly", 0) not in events()


def test_finalize_tears_down_the_modules_left_then_closes_the_components(installed):
    (world,) = make_world(1, registry=open_with())
    cid = world._c.context_id
    events().clear()
    coll = world._c.instance.coll
    coll.finalize()
    # COMM_WORLD's modules go first (best first module disabled last, as on Free), then every
    # component is closed, in the reverse order of opening, once.
    assert events()[:2] == [("disable", "ref", cid), ("disable", "fast", cid)]
    assert sorted(events()[2:]) == [("close", "fast"), ("close", "ref"), ("close", "worldonly")]
    assert table(world).modules == []
    coll.finalize()  # a second finalize has nothing left to do
    assert len(events()) == 5
    assert not coll.is_open


def test_finalize_leaves_the_modules_of_freed_communicators_alone(installed):
    (world,) = make_world(1, registry=open_with())
    world._c.destroy()
    disabled = [e for e in events() if e[0] == "disable"]
    world._c.instance.coll.finalize()
    assert [e for e in events() if e[0] == "disable"] == disabled
    assert ("close", "fast") in events()


def test_finalize_before_any_communicator_closes_nothing(installed):
    coll = CollSelection(open_with())
    coll.finalize()
    assert not coll.is_open


def test_a_component_that_declines_a_communicator_leaves_it_to_the_others(installed):
    (world,) = make_world(1, registry=open_with(coll_worldonly_priority="90", coll="worldonly,ref"))
    assert [name for name, _ in table(world).modules] == ["ref"]  # worldonly offered, unused
    assert table(world).provider("barrier") == "ref"


def test_a_failing_query_is_recorded_unless_the_component_was_asked_for(installed):
    # an exclude list admits grumpy without asking for it
    (world,) = make_world(1, registry=open_with(coll="^worldonly"))
    failures = world._c.instance.coll.opened().failures
    assert any(f.name == "grumpy" and "no collectives today" in f.reason for f in failures)
    with pytest.raises(ComponentLoadError, match=r"grumpy.*no collectives today"):
        make_world(1, registry=open_with(coll="grumpy,ref"))


def test_verbose_selection_prints_who_serves_what(installed, capfd):
    make_world(1, registry=open_with(coll_base_verbose="10"))
    err = capfd.readouterr().err
    line = next(line for line in err.splitlines() if "(context id 0)" in line)
    assert "fast: barrier, allreduce, ibarrier;" in line
    assert "ref: bcast, gather(via igather)" in line
    assert "nobody: " in line and "alltoallw" in line


# -- tags -----------------------------------------------------------------------------------------


def test_each_call_takes_the_next_tag_and_they_cycle_through_the_coll_range(installed):
    (world,) = make_world(1, registry=open_with())
    comm = world._c
    tags = [base.next_tag(comm) for _ in range(base.TAGS + 2)]
    assert tags[:3] == [-2, -3, -4]
    assert tags[base.TAGS - 1] == base.LAST_TAG == -99
    assert tags[base.TAGS :] == [-2, -3]
    assert base.FIRST_TAG == -2


def test_a_call_on_a_tag_still_in_flight_starts_after_it(installed):
    worlds = make_world(2, registry=open_with())

    def flood(world):
        comm = world._c
        requests = [table(world).iallreduce(comm, None, None, None) for _ in range(base.TAGS + 5)]
        world.Barrier()
        for request in requests:
            comm.engine.wait_until(lambda r=request: r.complete)
        return len([e for e in events() if e[0] == "ring" and e[1] == comm.rank])

    assert run_ranks(worlds, flood) == [base.TAGS + 5] * 2


# -- schedules ------------------------------------------------------------------------------------


def test_a_schedule_runs_round_after_round_from_the_progress_engine(installed):
    worlds = make_world(4, registry=open_with())

    def start_then_wait(world):
        comm = world._c
        request = table(world).iallreduce(comm, None, None, None)
        assert base.in_flight(comm.engine) in (0, 1)
        comm.engine.wait_until(lambda: request.complete)
        assert request.exception is None
        assert base.in_flight(comm.engine) == 0
        assert comm.engine.callbacks == ()  # the runner leaves once nothing is in flight
        return True

    assert run_ranks(worlds, start_then_wait) == [True] * 4
    assert sorted(e for e in events() if e[0] == "ring") == [("ring", r, 1) for r in range(4)]


def test_a_failed_round_or_local_step_fails_the_schedule_with_its_error(installed):
    worlds = make_world(2, registry=open_with())

    def too_long(comm, tag):
        into = memoryview(bytearray(1))
        if comm.rank == 0:
            yield [base.send(comm, memoryview(b"ab"), 1, tag)]
        else:
            yield [base.recv(comm, into, 0, tag)]
            raise AssertionError("a schedule went on after a failed round")

    def broken(comm, tag):
        yield None
        raise KeyError("lost")

    def run(world):
        comm = world._c
        failed = base.start_schedule(comm, too_long)
        comm.engine.wait_until(lambda: failed.complete)
        crashed = base.start_schedule(comm, broken)
        comm.engine.wait_until(lambda: crashed.complete)
        with pytest.raises(MPIException) if comm.rank == 1 else _Nothing():
            base.run_schedule(comm, too_long)
        return failed.error, crashed.error, type(crashed.exception)

    results = run_ranks(worlds, run)
    assert results[0] == (0, ERR_OTHER, KeyError)
    assert results[1] == (ERR_TRUNCATE, ERR_OTHER, KeyError)


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_schedule_that_yields_something_else_than_requests_fails(installed):
    (world,) = make_world(1, registry=open_with())

    def wrong(comm, tag):
        yield 42

    request = base.start_schedule(world._c, wrong)
    assert request.complete
    assert "a round is a sequence of requests" in str(request.exception)


def test_binomial_trees_cover_every_rank_once_from_any_root():
    for size in range(1, 12):
        for root in range(size):
            assert base.binomial_parent(root, root, size) is None
            assert base.subtree_size(root, root, size) == size
            seen = {root}
            for rank in range(size):
                for child in base.binomial_children(rank, root, size):
                    assert base.binomial_parent(child, root, size) == rank
                    assert child not in seen
                    seen.add(child)
                expected = 1 + sum(
                    base.subtree_size(child, root, size)
                    for child in base.binomial_children(rank, root, size)
                )
                assert base.subtree_size(rank, root, size) == expected
            assert seen == set(range(size))


def test_instances_in_one_interpreter_select_independently(installed):
    (fast_world,) = make_world(1, registry=open_with())
    (ref_world,) = make_world(1, registry=open_with(coll="ref,worldonly"))
    assert table(fast_world).provider("barrier") == "fast"
    assert table(ref_world).provider("barrier") == "ref"
    ref_world._c.instance.coll.finalize()  # closing one leaves the other running
    assert fast_world._c.instance.coll.is_open
    assert table(fast_world).provider("barrier") == "fast"


def test_every_operation_has_one_typed_signature_that_the_table_declares():
    from ompy.ompi.mca.coll import interface
    from ompy.ompi.mca.coll.base.table import CollTable

    assert set(interface.SIGNATURES) == set(OPERATIONS)
    declared = CollTable.__annotations__  # alias names (the module defers annotations)
    for operation, signature in interface.SIGNATURES.items():
        names = {name for name, value in vars(interface).items() if value is signature}
        assert declared[operation] in names, operation


def test_a_communicator_without_selection_has_a_table_that_refuses_every_operation():
    from ompy.ompi import errors
    from ompy.ompi.mca.coll.base import unselected_table

    table = unselected_table("the channel")
    for operation in ("barrier", "iallreduce", "bcast_object"):
        with pytest.raises(errors.Exception, match=f"implements {operation} on .*the channel"):
            getattr(table, operation)(None)
    with pytest.raises(AttributeError):
        table.no_such_operation  # noqa: B018 (the lookup is the test)
    assert table.modules == [] and table.provider("barrier") is None
