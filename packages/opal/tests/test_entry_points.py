"""The entry-point listing and its cache file: right after every install, cheap when warm.

Each test lays out distributions (``*.dist-info`` with ``entry_points.txt``) in a private
directory, makes that directory the whole ``sys.path`` and points ``XDG_CACHE_HOME`` at a
private cache, so the listing is compared with what ``importlib.metadata`` reads from the same
files.  Metadata is dated in the past unless a test is about fresh metadata: a listing whose
evidence is younger than ``RACY_SECONDS`` is never saved.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ompy.opal.mca import entry_points
from ompy.opal.mca.entry_points import EntryPoint

GROUP = "ompy.mca.testep"
AN_HOUR_AGO = 3600


def install(
    site: Path, name: str, entries: dict[str, str], *, group: str = GROUP, age: float = AN_HOUR_AGO
) -> Path:
    """What ``pip install`` leaves of a distribution: its metadata directory, dated ``age`` ago."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    lines = [f"[{group}]", *(f"{key} = {value}" for key, value in entries.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    date(info / "entry_points.txt", age)
    return info


def date(file: Path, age: float) -> None:
    import time

    then = time.time() - age
    os.utime(file, (then, then))


def listed(group: str = GROUP) -> list[tuple[str, str]]:
    return [(found.name, found.value) for found in entry_points.entry_points(group)]


def from_metadata(group: str = GROUP) -> list[tuple[str, str]]:
    seen: dict[tuple[str, str], None] = {}
    for found in importlib.metadata.entry_points(group=group):
        seen.setdefault((found.name, found.value), None)
    return list(seen)


@pytest.fixture
def site(tmp_path, monkeypatch) -> Path:
    """An empty ``sys.path`` of one directory, a private cache, and no listing in memory."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.setattr(sys, "path", [str(root)])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    entry_points.forget()
    yield root
    entry_points.forget()


def test_lists_what_the_metadata_says(site):
    install(site, "alpha", {"one": "alpha_mod:One", "two": "alpha_mod:Two"})
    install(site, "beta", {"three": "beta_mod:Three"}, group="ompy.other")
    assert (
        sorted(listed())
        == sorted(from_metadata())
        == [
            ("one", "alpha_mod:One"),
            ("two", "alpha_mod:Two"),
        ]
    )
    assert listed("ompy.other") == [("three", "beta_mod:Three")]
    assert listed("ompy.nothing.here") == []
    assert all(found.group == GROUP for found in entry_points.entry_points(GROUP))


def test_the_cache_file_is_written_and_read_back(site):
    install(site, "alpha", {"one": "alpha_mod:One"})
    assert listed() == [("one", "alpha_mod:One")]
    assert Path(entry_points.cache_file(sys.path)).is_file()
    entry_points.forget()
    # Take the metadata away behind the cache's back but keep the evidence identical: the
    # answer can now only come from the cache file.
    real = importlib.metadata.entry_points
    try:
        importlib.metadata.entry_points = None  # type: ignore[assignment]
        assert listed() == [("one", "alpha_mod:One")]
    finally:
        importlib.metadata.entry_points = real


def test_an_installed_distribution_is_seen_at_once(site):
    install(site, "alpha", {"one": "alpha_mod:One"})
    assert listed() == [("one", "alpha_mod:One")]
    entry_points.forget()  # a new process
    install(site, "gamma", {"four": "gamma_mod:Four"})
    assert sorted(listed()) == [("four", "gamma_mod:Four"), ("one", "alpha_mod:One")]


def test_a_removed_distribution_is_gone_at_once(site):
    install(site, "alpha", {"one": "alpha_mod:One"})
    gamma = install(site, "gamma", {"four": "gamma_mod:Four"})
    assert len(listed()) == 2
    entry_points.forget()
    shutil.rmtree(gamma)
    assert listed() == [("one", "alpha_mod:One")]


def test_a_rewritten_entry_point_file_is_read_again(site):
    info = install(site, "alpha", {"one": "alpha_mod:One"})
    assert listed() == [("one", "alpha_mod:One")]
    entry_points.forget()
    (info / "entry_points.txt").write_text(f"[{GROUP}]\none = alpha_mod:Other\n")
    date(info / "entry_points.txt", AN_HOUR_AGO / 2)
    assert listed() == [("one", "alpha_mod:Other")]


def test_fresh_metadata_is_used_but_not_saved(site):
    install(site, "alpha", {"one": "alpha_mod:One"}, age=0)
    assert listed() == [("one", "alpha_mod:One")]
    assert not Path(entry_points.cache_file(sys.path)).exists()


@pytest.mark.parametrize(
    "content",
    [
        '{"format": 2, "signature": [',  # cut short
        "[]",
        '{"format": 99, "signature": EVIDENCE, "groups": {}}',
        '{"format": 2, "signature": 5, "groups": {}}',
        '{"format": 2, "signature": EVIDENCE, "groups": {"g": [["only-a-name"]]}}',
        '{"format": 2, "signature": EVIDENCE, "groups": []}',
        "\u0000 not json at all",
    ],
)
def test_a_damaged_or_foreign_cache_file_is_ignored_and_replaced(site, content):
    install(site, "alpha", {"one": "alpha_mod:One"})
    file = Path(entry_points.cache_file(sys.path))
    file.parent.mkdir(parents=True)
    evidence = json.dumps(entry_points.signature(sys.path))
    file.write_text(content.replace("EVIDENCE", evidence))
    assert listed() == [("one", "alpha_mod:One")]
    entry_points.forget()
    assert listed() == [("one", "alpha_mod:One")]
    assert json.loads(file.read_text())["groups"][GROUP] == [["one", "alpha_mod:One"]]


def test_an_unwritable_cache_directory_costs_only_the_cache(site, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    install(site, "alpha", {"one": "alpha_mod:One"})
    assert listed() == [("one", "alpha_mod:One")]


def test_the_working_directory_changing_does_not_invalidate(site, tmp_path, monkeypatch):
    """``-c`` programs have ``''`` on their path: files written there must not cost a rescan."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", ["", str(site)])
    install(site, "alpha", {"one": "alpha_mod:One"})
    before = entry_points.signature(sys.path)
    (work / "output.txt").write_text("a program's output")
    assert entry_points.signature(sys.path) == before


def test_directories_without_distributions_share_the_cache_file(site, tmp_path):
    """Every program's directory is on its path; one file per environment, not per program."""
    install(site, "alpha", {"one": "alpha_mod:One"})
    programs = [tmp_path / "program-a", tmp_path / "program-b"]
    for program in programs:
        program.mkdir()
        (program / "app.py").write_text("print('hello')\n")
    files = {entry_points.cache_file([str(program), str(site)]) for program in programs}
    assert files == {entry_points.cache_file([str(site)])}
    assert entry_points.cache_file([str(site), str(tmp_path / "missing")]) in files


def test_a_stale_file_for_the_same_distributions_is_rewritten(site):
    info = install(site, "alpha", {"one": "alpha_mod:One"})
    assert listed() == [("one", "alpha_mod:One")]
    file = Path(entry_points.cache_file(sys.path))
    entry_points.forget()
    (info / "entry_points.txt").write_text(f"[{GROUP}]\none = alpha_mod:Two\n")
    date(info / "entry_points.txt", AN_HOUR_AGO / 3)
    assert Path(entry_points.cache_file(sys.path)) == file  # same distributions, same file
    assert listed() == [("one", "alpha_mod:Two")]
    assert json.loads(file.read_text())["groups"][GROUP] == [["one", "alpha_mod:Two"]]


def test_an_egg_on_the_path_is_evidence(site, tmp_path, monkeypatch):
    egg = tmp_path / "legacy-1.0.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "entry_points.txt").write_text(f"[{GROUP}]\nold = legacy:Old\n")
    date(egg / "EGG-INFO" / "entry_points.txt", AN_HOUR_AGO)
    monkeypatch.setattr(sys, "path", [str(site), str(egg)])
    names = [name for name, _mtime in entry_points.signature(sys.path)]
    assert names == [str(egg / "EGG-INFO" / "entry_points.txt")]


def test_entry_point_load_follows_the_attribute_path(site):
    (site / "ep_target.py").write_text(
        textwrap.dedent(
            """
            class Outer:
                class Inner:
                    pass
            """
        )
    )
    try:
        module = EntryPoint("m", "ep_target", GROUP).load()
        assert module.__name__ == "ep_target"
        assert EntryPoint("o", "ep_target:Outer", GROUP).load() is module.Outer
        nested = EntryPoint("i", "ep_target : Outer.Inner [extra]", GROUP).load()
        assert nested is module.Outer.Inner
        with pytest.raises(AttributeError):
            EntryPoint("x", "ep_target:Missing", GROUP).load()
        with pytest.raises(ModuleNotFoundError):
            EntryPoint("y", "ep_no_such_module:X", GROUP).load()
    finally:
        sys.modules.pop("ep_target", None)


def test_a_warm_process_imports_no_metadata_machinery(tmp_path):
    """The point of the cache: a second process lists its groups from the file alone."""
    site = tmp_path / "site"
    site.mkdir()
    install(site, "alpha", {"one": "alpha_mod:One"})
    program = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(site)!r})\n"
        "from ompy.opal.mca.entry_points import entry_points\n"
        f"found = [(e.name, e.value) for e in entry_points({GROUP!r})]\n"
        "print(json.dumps([found, 'importlib.metadata' in sys.modules]))\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    runs = [
        subprocess.run(
            [sys.executable, "-c", program],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        for _ in range(2)
    ]
    (cold_found, _cold_imported), (warm_found, warm_imported) = (
        json.loads(run.stdout) for run in runs
    )
    assert cold_found == warm_found == [["one", "alpha_mod:One"]]
    assert not warm_imported


names = st.text(alphabet="abcdefgh", min_size=1, max_size=4)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=st.lists(
        st.tuples(st.booleans(), names, st.dictionaries(names, names, max_size=3)),
        min_size=1,
        max_size=6,
    )
)
def test_after_any_installs_and_removals_the_listing_is_the_metadata(site, steps):
    """Whatever was installed or removed since the last process, the cache never answers
    with anything but what ``importlib.metadata`` reads now."""
    for child in site.iterdir():
        shutil.rmtree(child)
    entry_points.forget()
    age = AN_HOUR_AGO
    for add, distribution, entries in steps:
        info = site / f"d{distribution}-1.0.dist-info"
        if info.exists():
            shutil.rmtree(info)
        if add:
            age -= 1  # every rewrite dated differently, as real installs are
            install(site, f"d{distribution}", {k: f"m_{v}:C" for k, v in entries.items()}, age=age)
        entry_points.forget()  # each step: a new process
        assert sorted(listed()) == sorted(from_metadata())


def test_threads_listing_different_groups_at_once_agree_and_leave_a_valid_file(site):
    """With THREAD_MULTIPLE two threads may open frameworks at the same time."""
    groups = [f"ompy.mca.thr{index}" for index in range(8)]
    for index, group in enumerate(groups):
        install(site, f"thr{index}", {f"c{index}": f"thr_mod{index}:C"}, group=group)
    expected = {group: from_metadata(group) for group in groups}
    results: dict[str, list[tuple[str, str]]] = {}
    start = threading.Barrier(len(groups))

    def lister(group: str) -> None:
        start.wait(timeout=30)
        results[group] = listed(group)

    threads = [threading.Thread(target=lister, args=(group,)) for group in groups]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert results == expected
    entry_points.forget()
    stored = json.loads(Path(entry_points.cache_file(sys.path)).read_text())
    for group, found in stored["groups"].items():
        assert [tuple(item) for item in found] == expected[group]
    assert {group: listed(group) for group in groups} == expected
