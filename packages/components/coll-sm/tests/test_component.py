"""When the component offers a module, with what priority, and how set-up fails."""

from __future__ import annotations

import threading

import pytest

from ompy.mca.coll.sm import SmCollComponent
from ompy.mca.coll.sm.handshake import HandshakeError
from ompy.ompi.api.testing import make_world as loopback_world
from ompy.opal.mca.params import ParamError, Registry

_ranks = threading.local()


def test_offers_a_module_when_every_rank_shares_the_node(make_world):
    world = make_world(3)
    offer = world.query(1)
    assert offer is not None
    assert offer.priority == SmCollComponent.default_priority
    assert all(offer.module.implements(op) for op in ("barrier", "bcast", "reduce", "allreduce"))
    assert not offer.module.implements("gather")
    assert not offer.module.implements("iallreduce")


def test_the_priority_parameter_moves_it(make_world):
    assert make_world(2, coll_sm_priority=7).query(0).priority == 7


def test_declines_single_rank_communicators(make_world):
    assert make_world(1).query(0) is None


def test_declines_communicators_that_span_nodes(make_world):
    world = make_world(3, nodes=[0, 0, 1])
    assert [world.query(rank) for rank in range(3)] == [None, None, None]


def test_declines_processes_without_a_job_and_stays_out_of_their_tables():
    # The API's in-process test worlds have no job id (and create their ranks one after the
    # other in one thread, where a collective set-up would hang).
    worlds = loopback_world(2)
    assert worlds[0]._live("test").coll.provider("barrier") != "sm"


def test_locked_protocol_on_request(make_world):
    assert make_world(2, coll_sm_lockfree="no").query(0).module.lock_free is False


def test_a_fragment_size_off_the_page_size_is_refused_with_its_name():
    component = SmCollComponent(Registry(environ={"OMPY_MCA_coll_sm_fragment_size": "5000"}))
    component.register_params()
    with pytest.raises(ParamError, match="coll_sm_fragment_size = 5000"):
        component.open()


def test_every_rank_fails_together_when_rank_0_cannot_create_the_segment(make_world):
    world = make_world(3)

    def refuse(comm, size):
        raise OSError("no room")

    world.component.create_segment = refuse
    errors = []

    def body(rank):
        try:
            world.query(rank).module.enable(world.comms[rank])
        except HandshakeError as error:
            errors.append(str(error))

    world.run(body)
    assert len(errors) == 3
    assert all("rank 0 could not create the segment: no room" in e for e in errors)


def test_every_rank_fails_together_when_one_cannot_attach(make_world):
    world = make_world(3)
    attach = world.component.attach_segment

    def picky(descriptor):
        if _ranks.rank == 2:
            raise OSError("not today")
        return attach(descriptor)

    world.component.attach_segment = picky
    errors = []

    def body(rank):
        _ranks.rank = rank
        try:
            world.query(rank).module.enable(world.comms[rank])
        except HandshakeError as error:
            errors.append(str(error))

    world.run(body)
    assert len(errors) == 3
    assert all("rank 2: not today" in e for e in errors)
