"""MCA parameters: types, sources, precedence, provenance and the errors users see."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.opal.mca.params import (
    ParamFileError,
    ParamRegistrationError,
    ParamType,
    ParamValueError,
    Registry,
    SourceKind,
    environment_for_cli,
)


def make_registry(tmp_path, *, env=None, files=None, cli=None):
    environ = dict(env or {})
    environ.update(environment_for_cli(cli or {}))
    paths = []
    for index, content in enumerate(files or []):
        path = tmp_path / f"params{index}.conf"
        path.write_text(content)
        paths.append(path)
    registry = Registry(environ=environ, files=paths)
    registry.register("btl_tcp_sndbuf", ParamType.INT, 0, "Send buffer size", minimum=0)
    return registry


# -- precedence: every pair of sources --------------------------------------------------------

SOURCES = {
    "cli": lambda value: {"cli": {"btl_tcp_sndbuf": value}},
    "env": lambda value: {"env": {"OMPY_MCA_btl_tcp_sndbuf": value}},
    "file": lambda value: {"files": [f"btl_tcp_sndbuf = {value}\n"]},
}
RANK = {"cli": SourceKind.COMMAND_LINE, "env": SourceKind.ENVIRONMENT, "file": SourceKind.FILE}


@pytest.mark.parametrize(("high", "low"), list(itertools.permutations(SOURCES, 2)))
def test_the_higher_source_wins_for_every_pair(tmp_path, high, low):
    kwargs = {**SOURCES[low]("111"), **SOURCES[high]("222")}
    resolved = make_registry(tmp_path, **kwargs).resolve("btl_tcp_sndbuf")
    expected_winner = high if RANK[high] > RANK[low] else low
    assert resolved.value == (222 if expected_winner == high else 111)
    assert resolved.source.kind is RANK[expected_winner]


@pytest.mark.parametrize("source", SOURCES)
def test_any_user_source_beats_the_default(tmp_path, source):
    resolved = make_registry(tmp_path, **SOURCES[source]("7")).resolve("btl_tcp_sndbuf")
    assert (resolved.value, resolved.source.kind) == (7, RANK[source])


def test_the_default_applies_when_nobody_sets_a_value(tmp_path):
    resolved = make_registry(tmp_path).resolve("btl_tcp_sndbuf")
    assert (resolved.value, resolved.source.kind, str(resolved.source)) == (
        0,
        SourceKind.DEFAULT,
        "default",
    )


def test_earlier_parameter_files_win_over_later_ones(tmp_path):
    registry = make_registry(tmp_path, files=["btl_tcp_sndbuf = 1\n", "btl_tcp_sndbuf = 2\n"])
    resolved = registry.resolve("btl_tcp_sndbuf")
    assert resolved.value == 1
    assert str(resolved.source) == f"file ({tmp_path / 'params0.conf'}:1)"


def test_code_overrides_beat_everything(tmp_path):
    registry = make_registry(tmp_path, cli={"btl_tcp_sndbuf": "5"})
    registry.get("btl_tcp_sndbuf")
    registry.set("btl_tcp_sndbuf", 9)
    assert registry.resolve("btl_tcp_sndbuf").value == 9
    assert registry.resolve("btl_tcp_sndbuf").source.kind is SourceKind.OVERRIDE


def test_sources_are_described_for_users(tmp_path):
    env = make_registry(tmp_path, env={"OMPY_MCA_btl_tcp_sndbuf": "3"})
    cli = make_registry(tmp_path, cli={"btl_tcp_sndbuf": "3"})
    assert str(env.resolve("btl_tcp_sndbuf").source) == "environment (OMPY_MCA_btl_tcp_sndbuf)"
    assert str(cli.resolve("btl_tcp_sndbuf").source) == "command line (--mca btl_tcp_sndbuf)"


def test_param_files_come_from_the_environment_list(tmp_path):
    first, second = tmp_path / "a.conf", tmp_path / "b.conf"
    first.write_text("# a comment\n\nbtl_tcp_sndbuf = 4   # trailing comment\n")
    second.write_text("btl_tcp_sndbuf = 8\n")
    registry = Registry(environ={"OMPY_MCA_PARAM_FILES": f"{first}:{second}"})
    registry.register("btl_tcp_sndbuf", ParamType.INT, 0, "Send buffer size")
    assert registry.get("btl_tcp_sndbuf") == 4


def test_a_missing_param_file_is_not_an_error(tmp_path):
    registry = Registry(environ={"OMPY_MCA_PARAM_FILES": str(tmp_path / "absent.conf")})
    registry.register("x_y_z", ParamType.INT, 1, "A number")
    assert registry.get("x_y_z") == 1


def test_a_malformed_param_file_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.conf"
    path.write_text("ok = 1\nthis line has no equals sign\n")
    registry = Registry(environ={}, files=[path])
    with pytest.raises(ParamFileError, match=r"bad\.conf:2: expected 'name = value'"):
        registry.user_settings()


# -- types, bounds and choices --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [("1", True), ("yes", True), ("ON", True), ("true", True), ("0", False), ("no", False)],
)
def test_booleans_accept_the_usual_spellings(text, value):
    assert ParamType.BOOL.parse(text) is value


@given(st.integers(min_value=-(2**63), max_value=2**63))
def test_integers_round_trip_through_text(number):
    assert ParamType.INT.parse(ParamType.INT.format(number)) == number


@given(st.lists(st.from_regex(r"[a-z0-9_.^-]{1,8}", fullmatch=True), max_size=6))
def test_lists_round_trip_through_text(items):
    assert ParamType.LIST.parse(ParamType.LIST.format(tuple(items))) == tuple(items)


def test_integers_accept_prefixed_forms():
    assert ParamType.INT.parse("0x10") == 16


def test_a_bad_value_names_parameter_value_source_and_expectation(tmp_path):
    registry = make_registry(tmp_path, env={"OMPY_MCA_btl_tcp_sndbuf": "lots"})
    with pytest.raises(ParamValueError) as caught:
        registry.get("btl_tcp_sndbuf")
    message = str(caught.value)
    assert "'btl_tcp_sndbuf'" in message
    assert "'lots'" in message
    assert "environment (OMPY_MCA_btl_tcp_sndbuf)" in message
    assert "expected an integer" in message


def test_bounds_are_enforced_with_a_clear_message(tmp_path):
    registry = make_registry(tmp_path, cli={"btl_tcp_sndbuf": "-1"})
    expected = r"'-1' \(from command line \(--mca btl_tcp_sndbuf\)\): expected at least 0"
    with pytest.raises(ParamValueError, match=expected):
        registry.get("btl_tcp_sndbuf")


def test_enum_choices_are_enforced():
    registry = Registry(environ={"OMPY_MCA_coll_tuned_allreduce_algorithm": "fastest"}, files=[])
    registry.register(
        "coll_tuned_allreduce_algorithm",
        ParamType.ENUM,
        "auto",
        "Allreduce algorithm",
        choices=("auto", "ring", "recursive_doubling"),
    )
    with pytest.raises(ParamValueError, match="expected one of auto, ring, recursive_doubling"):
        registry.get("coll_tuned_allreduce_algorithm")


def test_a_default_outside_its_own_bounds_is_a_registration_error():
    with pytest.raises(ParamRegistrationError, match="default"):
        Registry(environ={}, files=[]).register("a_b_c", ParamType.INT, -5, "x", minimum=0)


def test_registering_one_name_twice_differently_is_refused():
    registry = Registry(environ={}, files=[])
    registry.register("a_b_c", ParamType.INT, 1, "x")
    registry.register("a_b_c", ParamType.INT, 1, "x")  # the same declaration again is fine
    with pytest.raises(ParamRegistrationError, match="registered twice"):
        registry.register("a_b_c", ParamType.INT, 2, "x")


def test_reading_an_unregistered_parameter_is_an_error():
    with pytest.raises(Exception, match="'nope' is not registered"):
        Registry(environ={}, files=[]).get("nope")


# -- unknown names --------------------------------------------------------------------------


def test_unknown_user_settings_get_a_warning_with_the_closest_names(tmp_path):
    registry = make_registry(tmp_path, env={"OMPY_MCA_btl_tcp_sndbf": "1"})
    (warning,) = registry.unknown_warnings()
    assert "'btl_tcp_sndbf'" in warning
    assert "environment (OMPY_MCA_btl_tcp_sndbf)" in warning
    assert "did you mean 'btl_tcp_sndbuf'" in warning


def test_reserved_variables_are_not_mistaken_for_parameters(tmp_path):
    registry = make_registry(tmp_path, cli={"btl_tcp_sndbuf": "1"})
    assert registry.unknown_warnings() == []
