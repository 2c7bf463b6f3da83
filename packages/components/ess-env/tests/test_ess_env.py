"""The env component offers exactly when launcher variables are present."""

from __future__ import annotations

import secrets

import pytest

from ompy.mca.ess.env import EnvEssComponent
from ompy.opal.mca.params import Registry
from ompy.orte.control import LaunchEnvironmentError, environment_for_rank


@pytest.fixture
def component() -> EnvEssComponent:
    component = EnvEssComponent(Registry(environ={}, files=[]))
    component.register_params()
    component.open()
    return component


def launch_environment() -> dict[str, str]:
    return environment_for_rank(
        jobid="jabc",
        rank=1,
        size=2,
        local_rank=1,
        local_size=2,
        node_id=0,
        node_name="n0",
        server=("127.0.0.1", 5000),
        secret=secrets.token_bytes(32),
        oversubscribed=False,
        session_dir="/tmp/ompy-jabc",
    )


def test_no_launcher_variables_no_offer(component):
    assert component.query({"HOME": "/root", "OMPY_MCA_ess": "env"}) is None


def test_launcher_variables_give_an_offer_at_priority_fifty(component):
    offer = component.query(launch_environment())
    assert offer is not None and offer.priority == 50
    identity = offer.module.identity()
    assert (identity.jobid, identity.rank, identity.size) == ("jabc", 1, 2)


def test_a_single_stray_variable_still_offers_and_then_explains(component):
    offer = component.query({"OMPY_RANK": "0"})
    assert offer is not None
    with pytest.raises(LaunchEnvironmentError, match="OMPY_JOBID, OMPY_SIZE"):
        offer.module.identity()


def test_the_offer_does_not_change_when_the_environment_does(component):
    environ = launch_environment()
    offer = component.query(environ)
    environ["OMPY_RANK"] = "0"
    assert offer.module.identity().rank == 1
