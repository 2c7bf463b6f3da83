"""When peers share the node but sm cannot run, it says why (a warning) and stays out.

It never fails silently: a job that falls back to tcp because, say, its segment could not be
created would otherwise run several times slower with nobody told.  And it never hands out a
name another user could guess: segment names carry random bits after the job id.
"""

from __future__ import annotations

import glob
import logging
import os
import uuid

import pytest

from ompy.mca.btl.sm import SmBtlComponent
from ompy.opal.mca.btl import BtlContext
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import SegmentSpaceError
from ompy.opal.mca.shmem import base as shmem_base
from ompy.opal.modex import InMemoryModex
from ompy.opal.proc import Proc
from ompy.opal.progress import ProgressEngine


@pytest.fixture
def made():
    items: list = []
    yield items
    for component, engine, module in items:
        if module is not None:
            module.finalize()
        component.close()
        engine.close()
    shmem_base.reset_selection()


def query(made: list, jobid: str, registry: Registry):
    component = SmBtlComponent(registry)
    component.register_params()
    component.open()
    engine = ProgressEngine(spin_count=10)
    context = BtlContext(Proc(jobid, 0), InMemoryModex(), bytes(16), engine, local_size=2)
    offer = component.query(context)
    made.append((component, engine, offer.module[0] if offer else None))
    return offer, context


def test_a_segment_that_cannot_be_created_is_a_warning_naming_the_cause(made, monkeypatch, caplog):
    registry = Registry(environ={}, files=[])
    selected = shmem_base.selection(registry)

    def refuse(name: str, size: int):
        raise SegmentSpaceError(f"no room for {name} ({size} bytes)")

    monkeypatch.setattr(selected.module, "create", refuse)
    caplog.set_level(logging.WARNING, logger="ompy")
    logging.getLogger("ompy").addHandler(caplog.handler)
    try:
        offer, context = query(made, f"t{os.getpid()}{uuid.uuid4().hex[:6]}", registry)
    finally:
        logging.getLogger("ompy").removeHandler(caplog.handler)
    assert offer is None
    assert context.node_transports == set()
    (record,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "shared memory cannot be used" in record.getMessage()
    assert "no room for ompy-" in record.getMessage()


def test_names_are_unpredictable_and_the_offer_is_noted_for_the_other_transports(made):
    jobid = f"t{os.getpid()}{uuid.uuid4().hex[:6]}"
    names = set()
    registry = Registry(environ={}, files=[])
    for _ in range(2):
        offer, context = query(made, jobid, registry)
        assert offer is not None
        assert context.node_transports == {"sm"}
        (path,) = glob.glob(f"/dev/shm/ompy-{jobid}-*")
        names.add(os.path.basename(path))
        made[-1][2].finalize()
        made[-1] = (*made[-1][:2], None)
    assert len(names) == 2, "two segments of the same job and rank got the same name"
    for name in names:
        random = name.split("-")[2]
        assert len(random) == 16 and int(random, 16) >= 0
