"""``orte_connect_timeout``: how long a rank may take to reach ompy run's control server, a
parameter like any other (help, level, source), read by the rank and by the launcher."""

from __future__ import annotations

import secrets
import socket
import time

import pytest

from ompy.opal.mca.params import Registry, environment_for_cli, reset_registry
from ompy.orte import runtime
from ompy.orte.control import AuthenticationError, environment_for_rank, identity_from_environment
from ompy.orte.layer import register_params

pytestmark = pytest.mark.timeout(60)


def test_it_is_a_documented_orte_parameter_with_its_source():
    registry = Registry(environ=environment_for_cli({"orte_connect_timeout": "30"}), files=[])
    register_params(registry)
    resolved = registry.resolve("orte_connect_timeout")
    assert resolved.value == 30.0
    assert str(resolved.source) == "command line (--mca orte_connect_timeout)"
    assert resolved.spec.scope == ("orte", "")
    assert "control server" in resolved.spec.help
    assert resolved.spec.level == 6


def test_a_rank_reads_it_from_its_parameters(monkeypatch):
    monkeypatch.setenv("OMPY_MCA_orte_connect_timeout", "2.5")
    reset_registry()
    try:
        assert runtime._connect_timeout() == 2.5
    finally:
        reset_registry()


def test_a_rank_gives_up_on_a_silent_server_after_the_timeout(tmp_path):
    silent = socket.create_server(("127.0.0.1", 0))  # accepts (backlog), never says a word
    try:
        env = environment_for_rank(
            jobid="jct",
            rank=0,
            size=1,
            local_rank=0,
            local_size=1,
            node_id=0,
            node_name="here",
            server=silent.getsockname()[:2],
            secret=secrets.token_bytes(32),
            oversubscribed=False,
            session_dir=str(tmp_path),
        )
        start = time.monotonic()
        with pytest.raises(AuthenticationError, match="handshake"):
            runtime.Runtime(identity_from_environment(env), connect_timeout=0.3)
        assert 0.25 < time.monotonic() - start < 10
    finally:
        silent.close()
