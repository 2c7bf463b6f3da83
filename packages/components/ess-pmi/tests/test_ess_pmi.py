"""The PMI client, the modex over it and the ess pmi identity, against an in-process server."""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent))

from fakepmi import FakePmiServer

from ompy.mca.ess.pmi.client import connect
from ompy.mca.ess.pmi.component import PmiEssComponent, PmiEssModule
from ompy.mca.ess.pmi.placement import (
    from_mapping,
    from_slurm,
    parse_process_mapping,
)
from ompy.mca.ess.pmi.services import PmiJobServices, decode_blob, encode_blob
from ompy.mca.ess.pmi.wire import (
    PmiError,
    decode_line,
    decode_record,
    encode_line,
    encode_record,
)
from ompy.opal.mca.params import Registry
from ompy.orte.control import ModexKeyError

pytestmark = pytest.mark.timeout(60)


def each_rank(size, work):
    """Run ``work(rank)`` in one thread per rank; the results in rank order."""
    with ThreadPoolExecutor(size) as pool:
        return list(pool.map(work, range(size)))


# -- wire --------------------------------------------------------------------------------------

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,10}", fullmatch=True), _text))
def test_a_pmi2_record_carries_any_text_including_semicolons(fields):
    fields.pop("cmd", None)
    record = encode_record("kvs-put", **fields)
    assert int(record[:6]) == len(record) - 6
    assert decode_record(record[6:]) == {"cmd": "kvs-put", **fields}


def test_pmi1_lines_refuse_values_with_white_space():
    assert decode_line(encode_line("put", key="k", value="v")) == {
        "cmd": "put",
        "key": "k",
        "value": "v",
    }
    with pytest.raises(PmiError, match="white space"):
        encode_line("put", key="k", value="a b")


@pytest.mark.parametrize("body", [b"cmd=x;key", b"cmd=x;key=v", b"key=v;", b"\xff"])
def test_malformed_pmi2_records_are_errors(body):
    with pytest.raises(PmiError):
        decode_record(body)


# -- clients -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("versions", "asked", "spoken"),
    [((2, 1), "auto", 2), ((2, 1), "1", 1), ((1,), "auto", 1), ((2,), "2", 2)],
)
def test_clients_put_fence_and_get_in_the_version_agreed(versions, asked, spoken):
    server = FakePmiServer(3, versions)

    def rank_work(rank):
        client = connect(server.environ(rank), asked)
        assert (client.version, client.rank, client.size) == (spoken, rank, 3)
        client.put(f"k{rank}", f"v{rank}")
        client.fence()
        seen = [client.get(f"k{peer}") for peer in range(3)]
        missing = client.get("nobody-put-this")
        mapping = client.job_attribute("PMI_process_mapping")
        client.finalize()
        return seen, missing, mapping

    for seen, missing, mapping in each_rank(3, rank_work):
        assert seen == ["v0", "v1", "v2"]
        assert missing is None
        assert mapping == "(vector,(0,1,3))"
    server.join()
    assert server.finalized == {0, 1, 2}


def test_asking_for_pmi2_from_a_pmi1_server_names_the_parameter():
    server = FakePmiServer(1, versions=(1,))
    with pytest.raises(PmiError, match=r"does not speak PMI-2.*ess_pmi_version"):
        connect(server.environ(0), "2")


def test_a_server_that_goes_away_is_an_error_not_a_hang():
    ours, theirs = socket.socketpair()
    ours.close()
    with pytest.raises(PmiError, match=r"closed the connection|cannot"):
        connect({"PMI_FD": str(theirs.detach()), "PMI_RANK": "0", "PMI_SIZE": "1"})


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"PMI_RANK": "0", "PMI_SIZE": "1"}, "PMI_FD is not set"),
        ({"PMI_FD": "x", "PMI_RANK": "0", "PMI_SIZE": "1"}, "PMI_FD='x' is not an integer"),
        ({"PMI_FD": "987", "PMI_RANK": "0", "PMI_SIZE": "1"}, "PMI_FD=987 is not an open"),
    ],
)
def test_bad_pmi_variables_are_named(environ, message):
    with pytest.raises(PmiError, match=re.escape(message)):
        connect(environ)


def test_values_longer_than_the_server_takes_are_refused():
    server = FakePmiServer(1, versions=(1,))
    client = connect(server.environ(0))
    with pytest.raises(PmiError, match="at most 63 characters"):
        client.put("k", "x" * 64)
    client.finalize()


# -- modex over PMI ----------------------------------------------------------------------------


@settings(deadline=None)
@given(st.dictionaries(st.text(max_size=8), st.binary(max_size=300)), st.integers(20, 200))
def test_a_commit_survives_being_cut_into_pieces(data, limit):
    pieces = encode_blob(data, limit)
    assert all(len(piece) <= max(limit, 16 + 1 + len(str(len(pieces)))) for piece in pieces)
    count, _, head = pieces[0].partition(":")
    assert int(count) == len(pieces)
    assert decode_blob([head, *pieces[1:]]) == data


@pytest.mark.parametrize("versions", [(2, 1), (1,)])
def test_the_modex_rules_hold_over_pmi(versions):
    server = FakePmiServer(3, versions)
    big = os.urandom(500)  # many pieces with PMI-1's small values

    def rank_work(rank):
        services = PmiJobServices(connect(server.environ(rank)))
        services.commit({"card": [rank, "x"], "big": big})
        services.fence()
        first = [services.get(peer, "card") for peer in range(3)]
        assert services.get(2, "big") == big
        with pytest.raises(ModexKeyError):
            services.get(1, "never")
        services.fence()  # everyone has read before anyone commits again
        services.commit({"card": [rank, "replaced"]})  # a key committed again is replaced
        services.fence()
        second = [services.get(peer, "card") for peer in range(3)]
        with pytest.raises(ModexKeyError):
            services.get(7, "card")
        services.finalize()
        services.finalize()  # idempotent
        return first, second

    for first, second in each_rank(3, rank_work):
        assert first == [[0, "x"], [1, "x"], [2, "x"]]
        assert second == [[0, "replaced"], [1, "replaced"], [2, "replaced"]]


def test_abort_reaches_the_server():
    server = FakePmiServer(1)
    services = PmiJobServices(connect(server.environ(0)))
    services.abort(7, "a; b")
    server.join()
    assert server.aborts[0]["msg"] == "a; b"
    assert server.aborts[0]["isworld"] == "TRUE"


# -- placement ---------------------------------------------------------------------------------

SLURM = {
    "SLURM_NODEID": "1",
    "SLURM_LOCALID": "1",
    "SLURM_STEP_NODELIST": "n[1-3]",
    "SLURM_STEP_TASKS_PER_NODE": "3,2(x2)",
}


def test_slurm_variables_place_the_rank():
    placement = from_slurm(SLURM)
    assert (placement.node_id, placement.node_name) == (1, "n2")
    assert (placement.local_rank, placement.local_size) == (1, 2)
    assert placement.rank_nodes == ()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"SLURM_NODEID": "3"}, "SLURM_NODEID=3 is not a node of the step (3 nodes)"),
        ({"SLURM_LOCALID": "2"}, "SLURM_LOCALID=2 is outside node 'n2'"),
        ({"SLURM_NODEID": "-1"}, "SLURM_NODEID='-1' is not a non-negative integer"),
        ({"SLURM_STEP_TASKS_PER_NODE": "3,2"}, "names 3 nodes but SLURM_STEP_TASKS_PER_NODE"),
        ({"SLURM_STEP_NODELIST": "n[1-"}, "the Slurm step's layout"),
    ],
)
def test_bad_slurm_variables_are_named(change, message):
    with pytest.raises(PmiError, match=re.escape(message)):
        from_slurm({**SLURM, **change})


@pytest.mark.parametrize(
    ("text", "size", "nodes"),
    [
        ("(vector,(0,2,2))", 4, (0, 0, 1, 1)),
        ("(vector,(0,3,1))", 7, (0, 1, 2, 0, 1, 2, 0)),
        ("(vector, (0,1,3), (1,1,1))", 4, (0, 0, 0, 1)),
        ("(vector,(2,1,2))", 2, (2, 2)),
    ],
)
def test_process_mappings_give_every_rank_a_node(text, size, nodes):
    assert parse_process_mapping(text, size) == nodes


@pytest.mark.parametrize(
    "text", ["", "(vector)", "(vector,(0,1))", "(block,(0,1,1))", "(vector,(0,0,1))"]
)
def test_malformed_process_mappings_are_errors(text):
    with pytest.raises(PmiError, match="PMI_process_mapping"):
        parse_process_mapping(text, 2)


def test_a_mapping_places_this_rank_among_its_node():
    placement = from_mapping("(vector,(0,2,2))", rank=3, size=4)
    assert (placement.node_id, placement.local_rank, placement.local_size) == (1, 1, 2)
    assert placement.rank_nodes == (0, 0, 1, 1)
    assert placement.node_names[1] == placement.node_name == socket.gethostname()


# -- the component -----------------------------------------------------------------------------


@pytest.fixture
def component():
    component = PmiEssComponent(Registry(environ={}, files=[]))
    component.register_params()
    component.open()
    return component


def test_the_component_offers_only_to_a_pmi_rank(component):
    assert component.query({"HOME": "/root"}) is None
    assert component.query({"PMI_FD": "3", "PMI_RANK": "0"}) is None
    offer = component.query({"PMI_FD": "3", "PMI_RANK": "0", "PMI_SIZE": "2"})
    assert offer is not None and isinstance(offer.module, PmiEssModule)
    assert offer.priority == 40  # below ess env (50): a rank of ompy run inside srun is ompy's


@pytest.mark.parametrize("slurm", [True, False])
def test_every_rank_gets_a_direct_identity_with_one_shared_secret(slurm, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    server = FakePmiServer(4, mapping="(vector,(0,2,2))")

    def rank_work(rank):
        extra = {}
        if slurm:
            extra = {
                "SLURM_NODEID": str(rank // 2),
                "SLURM_LOCALID": str(rank % 2),
                "SLURM_STEP_NODELIST": "a,b",
                "SLURM_STEP_TASKS_PER_NODE": "2(x2)",
            }
        module = PmiEssModule(server.environ(rank, **extra), "auto", forget=False)
        identity = module.identity()
        services = module.job_services(identity)
        assert services is module.job_services(identity)
        services.finalize()
        return identity

    identities = each_rank(4, rank_work)
    assert [i.rank for i in identities] == [0, 1, 2, 3]
    assert {i.secret for i in identities} == {identities[0].secret}
    assert len(identities[0].secret) == 32
    assert all(i.direct and i.server is None and not i.singleton for i in identities)
    assert [(i.node_id, i.local_rank, i.local_size) for i in identities] == [
        (0, 0, 2),
        (0, 1, 2),
        (1, 0, 2),
        (1, 1, 2),
    ]
    assert {i.jobid for i in identities} == {"pmi77_0"}
    # one private session directory for the job's ranks on this host
    (session,) = {i.session_dir for i in identities}
    assert Path(session).parent == tmp_path and Path(session).name.startswith(
        "ompy-session-pmi77_0-"
    )
    assert Path(session).stat().st_mode & 0o777 == 0o700
    if slurm:
        assert [i.node_name for i in identities] == ["a", "a", "b", "b"]
        assert identities[0].rank_nodes == ()
    else:
        assert identities[0].rank_nodes == (0, 0, 1, 1)


def test_a_session_directory_of_someone_else_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    server = FakePmiServer(1)
    module = PmiEssModule(server.environ(0), "auto", forget=False)
    real_mkdir = os.mkdir

    def planted(path, mode=0o777):  # an attacker's symlink is there first
        os.symlink(tmp_path, path)
        real_mkdir(path, mode)

    monkeypatch.setattr(os, "mkdir", planted)
    with pytest.raises(ValueError, match="is not a directory of this user"):
        module.identity()


def test_a_broken_pmi_setup_stops_the_rank_naming_pmi():
    module = PmiEssModule({"PMI_FD": "987", "PMI_RANK": "0", "PMI_SIZE": "1"}, "auto", False)
    with pytest.raises(ValueError, match="ess pmi: PMI_FD=987 is not an open socket"):
        module.identity()
