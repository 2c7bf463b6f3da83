"""Slurm hostlists and count lists expand exactly as Slurm writes them, and bad text fails."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.orte.hostlist import HostlistError, expand_counts, expand_hostlist


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("login", ["login"]),
        ("n[1-3]", ["n1", "n2", "n3"]),
        ("n[1-3,7]", ["n1", "n2", "n3", "n7"]),
        ("n[08-11]", ["n08", "n09", "n10", "n11"]),
        ("gpu[01-02]-a,login", ["gpu01-a", "gpu02-a", "login"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("a,b[2],c", ["a", "b2", "c"]),
        ("node[9-10]", ["node9", "node10"]),
        ("x[001]", ["x001"]),
        ("n[1-2],n[1-2]", ["n1", "n2", "n1", "n2"]),
        ("[1-2]", ["1", "2"]),
    ],
)
def test_hostlists_expand_as_slurm_writes_them(text, hosts):
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty"),
        ("n[1-3", "never closed"),
        ("n1-3]", "without '['"),
        ("n[[1]]", "nested"),
        ("n[3-1]", "backwards"),
        ("n[a-b]", "not a number"),
        ("n[1-2],,m", "empty entry"),
        ("n[]", "not a number"),
        ("n 1", "white space"),
        ("n[1-999999999]", "more than"),
    ],
)
def test_malformed_hostlists_name_the_problem(text, problem):
    with pytest.raises(HostlistError, match=re.escape(problem)):
        expand_hostlist(text)


def test_a_hostlist_must_be_text():
    with pytest.raises(TypeError, match="str"):
        expand_hostlist(None)  # type: ignore[arg-type]


_prefix = st.text(alphabet="abcxyz-", min_size=1, max_size=4)
_range = st.tuples(st.integers(0, 120), st.integers(0, 5), st.integers(1, 3))


@settings(deadline=None)  # a busy machine must not fail a pure function
@given(st.lists(st.tuples(_prefix, st.lists(_range, min_size=1, max_size=3)), min_size=1))
def test_any_compact_list_expands_to_the_names_it_stands_for(entries):
    parts, expected = [], []
    for prefix, ranges in entries:
        items, names = [], []
        for low, extent, width in ranges:
            high = low + extent
            items.append(f"{low:0{width}d}-{high}" if extent else f"{low:0{width}d}")
            names.extend(f"{prefix}{value:0{width}d}" for value in range(low, high + 1))
        parts.append(f"{prefix}[{','.join(items)}]")
        expected.extend(names)
    assert expand_hostlist(",".join(parts)) == expected


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        ("4", [4]),
        ("2(x3),1", [2, 2, 2, 1]),
        ("1,2(x2),3", [1, 2, 2, 3]),
        ("16(x1)", [16]),
    ],
)
def test_count_lists_expand_their_repeats(text, counts):
    assert expand_counts(text) == counts


@pytest.mark.parametrize(
    ("text", "problem"),
    [("", "empty"), ("2(x0)", "zero times"), ("2x3", "not 'N'"), ("2,,1", "not 'N'")],
)
def test_malformed_count_lists_name_the_problem(text, problem):
    with pytest.raises(HostlistError, match=re.escape(problem)):
        expand_counts(text)


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(1, 64), st.integers(1, 5)), min_size=1, max_size=20))
def test_any_run_length_encoding_expands_to_its_runs(runs):
    text = ",".join(f"{count}(x{times})" if times > 1 else str(count) for count, times in runs)
    assert expand_counts(text) == [count for count, times in runs for _ in range(times)]
