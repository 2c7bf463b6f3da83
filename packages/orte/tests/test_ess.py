"""The ess framework: a launched rank is identified by ``env``, anything else is a singleton.

These tests select through the installed components (``ompy-ess-env``, ``ompy-ess-singleton``)
with an explicit environment, so the real environment of the test process does not matter.
"""

from __future__ import annotations

import os
import secrets

import pytest

from ompy.opal.mca import Cardinality, NoComponentError, installed_frameworks
from ompy.opal.mca.params import Registry
from ompy.orte.control import (
    VARIABLES,
    LaunchEnvironmentError,
    environment_for_rank,
    identity_from_environment,
)
from ompy.orte.mca.ess import Identity, framework
from ompy.orte.mca.ess.base import identify, select_module

SECRET = secrets.token_bytes(32)


def launched(**changes) -> dict[str, str]:
    fields = dict(
        jobid="j3f9a1c",
        rank=2,
        size=4,
        local_rank=0,
        local_size=2,
        node_id=1,
        node_name="node1",
        server=("127.0.0.1", 40123),
        secret=SECRET,
        oversubscribed=True,
        session_dir="/tmp/ompy-j3f9a1c",
    )
    fields.update(changes)
    return environment_for_rank(**fields)


def params(**mca) -> Registry:
    return Registry(environ={f"OMPY_MCA_{k}": v for k, v in mca.items()}, files=[])


def test_the_framework_is_one_of_many_in_the_orte_layer():
    assert (framework.name, framework.layer, framework.interface_version) == ("ess", "orte", (1, 0))
    assert framework.cardinality is Cardinality.ONE
    assert framework in installed_frameworks()


def test_a_launched_rank_is_identified_from_its_environment():
    component, _module = select_module(launched(), params())
    assert component.name == "env"
    identity = identify(launched(), params())
    assert identity == Identity(
        jobid="j3f9a1c",
        rank=2,
        size=4,
        local_rank=0,
        local_size=2,
        node_id=1,
        node_name="node1",
        oversubscribed=True,
        session_dir="/tmp/ompy-j3f9a1c",
        server=("127.0.0.1", 40123),
        secret=SECRET,
    )
    assert not identity.singleton


def test_without_launcher_variables_the_process_is_a_singleton():
    component, _module = select_module({"PATH": "/bin", "OMPY_MCA_ess_base_verbose": "0"}, params())
    assert component.name == "singleton"
    identity = identify({}, params())
    assert identity.singleton and (identity.rank, identity.size) == (0, 1)
    assert identity.jobid == f"s{os.getpid()}"
    assert identity.server is None and identity.secret is None


def test_the_user_can_force_the_singleton_even_under_a_launcher():
    component, _module = select_module(launched(), params(ess="singleton"))
    assert component.name == "singleton"


def test_excluding_every_component_is_a_clear_error():
    with pytest.raises(NoComponentError, match="no ess component is able to run here"):
        select_module({}, params(ess="^env,singleton"))


@pytest.mark.parametrize(
    ("variable", "value", "complaint"),
    [
        ("OMPY_RANK", "two", "OMPY_RANK='two' is malformed: expected a non-negative decimal"),
        ("OMPY_SIZE", "-4", "OMPY_SIZE='-4' is malformed"),
        ("OMPY_SERVER", "127.0.0.1", "OMPY_SERVER='127.0.0.1' is malformed: expected 'host:port'"),
        ("OMPY_SERVER", "127.0.0.1:70000", "expected a port between 1 and 65535"),
        (
            "OMPY_OVERSUBSCRIBED",
            "yes",
            "OMPY_OVERSUBSCRIBED='yes' is malformed: expected '1' or '0'",
        ),
        ("OMPY_SECRET", "abc", "OMPY_SECRET is malformed: expected 64 hex digits, got 3"),
        ("OMPY_JOBID", "", "OMPY_JOBID='' is malformed"),
        ("OMPY_RANK", "4", "inconsistent: rank 4 is outside a job of size 4"),
        ("OMPY_LOCAL_RANK", "2", "local rank 2 is outside a node with 2 ranks"),
    ],
)
def test_malformed_launcher_variables_are_named_not_ignored(variable, value, complaint):
    environ = {**launched(), variable: value}
    with pytest.raises(LaunchEnvironmentError, match=complaint):
        identify(environ, params())


def test_a_malformed_secret_is_not_echoed():
    bad = "g" * 64
    with pytest.raises(LaunchEnvironmentError) as caught:
        identity_from_environment({**launched(), "OMPY_SECRET": bad})
    assert bad not in str(caught.value)


def test_missing_launcher_variables_are_listed():
    environ = launched()
    del environ["OMPY_SECRET"], environ["OMPY_SESSION_DIR"]
    with pytest.raises(LaunchEnvironmentError, match="OMPY_SECRET, OMPY_SESSION_DIR are missing"):
        identify(environ, params())


def test_the_launcher_cannot_build_an_impossible_identity():
    with pytest.raises(ValueError, match="rank 4 is outside a job of size 4"):
        launched(rank=4)
    with pytest.raises(ValueError, match="job secret must be 32 bytes"):
        launched(secret=b"short")
    with pytest.raises(TypeError, match="'size' must be an int"):
        launched(size="4")


def test_the_environment_names_every_variable_and_round_trips():
    environ = launched()
    assert sorted(environ) == sorted(VARIABLES)
    assert environ["OMPY_SERVER"] == "127.0.0.1:40123"
    assert environ["OMPY_SECRET"] == SECRET.hex()
    assert environ["OMPY_OVERSUBSCRIBED"] == "1"
    assert identity_from_environment(environ).secret == SECRET


def test_an_identity_can_be_logged_without_its_secret():
    identity = identity_from_environment(launched())
    assert SECRET.hex() not in repr(identity) and "secret" not in repr(identity)


def test_the_universe_size_travels_with_the_identity_when_the_launcher_gives_it():
    environ = launched(universe_size=8)
    assert environ["OMPY_UNIVERSE_SIZE"] == "8"
    identity = identity_from_environment(environ)
    assert (identity.universe_size, identity.universe) == (8, 8)
    without = identity_from_environment(launched())
    assert "OMPY_UNIVERSE_SIZE" not in launched()
    assert (without.universe_size, without.universe) == (0, 4)  # the job's size


def test_a_universe_smaller_than_the_job_or_malformed_is_refused():
    with pytest.raises(ValueError, match="universe size 3 is smaller than the job's size 4"):
        launched(universe_size=3)
    with pytest.raises(LaunchEnvironmentError, match="OMPY_UNIVERSE_SIZE"):
        identity_from_environment({**launched(), "OMPY_UNIVERSE_SIZE": "-2"})
