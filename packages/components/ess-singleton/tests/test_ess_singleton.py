"""The singleton component always offers, below env, a job of one without a server."""

from __future__ import annotations

import os
import tempfile

from ompy.mca.ess.singleton import SingletonEssComponent
from ompy.opal.mca.params import Registry


def make(**mca: str) -> SingletonEssComponent:
    environ = {f"OMPY_MCA_{k}": v for k, v in mca.items()}
    component = SingletonEssComponent(Registry(environ=environ, files=[]))
    component.register_params()
    component.open()
    return component


def test_it_always_offers_at_priority_ten():
    assert make().query({}).priority == 10
    assert make().query({"OMPY_RANK": "3"}).priority == 10


def test_the_priority_is_a_parameter():
    assert make(ess_singleton_priority="99").query({}).priority == 99


def test_the_identity_is_rank_zero_of_one_with_no_server():
    identity = make().query(None).module.identity()
    assert identity.singleton
    assert (identity.rank, identity.size, identity.local_rank, identity.local_size) == (0, 1, 0, 1)
    assert identity.jobid == f"s{os.getpid()}"
    assert identity.server is None and identity.secret is None
    assert identity.session_dir.startswith(os.path.join(tempfile.gettempdir(), "ompy-session-s"))
    assert not os.path.exists(identity.session_dir)  # the run-time creates it, not the query
