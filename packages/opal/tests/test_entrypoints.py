"""The entry-point reader sees exactly what importlib.metadata sees, at a fraction of the cost."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import zipfile

import pytest

from ompy.opal.mca.entrypoints import entry_points, load_target, parse

GROUPS = ["ompy.frameworks", "ompy.layers", "ompy.cli", "ompy.mca.ess", "console_scripts"]


@pytest.mark.parametrize("group", GROUPS)
def test_agrees_with_importlib_metadata_on_the_installed_packages(group):
    ours = sorted((ep.name, ep.value) for ep in entry_points(group))
    theirs = sorted((ep.name, ep.value) for ep in importlib.metadata.entry_points(group=group))
    assert ours == theirs


def test_a_new_distribution_is_seen_at_once_and_loads_lazily(distributions):
    distributions.add(
        "late-plugin",
        {"ompy.test.late": {"thing": "late_plugin_mod:VALUE"}},
        {"late_plugin_mod.py": "VALUE = 42\n"},
    )
    (found,) = entry_points("ompy.test.late")
    assert (found.name, found.value, found.distribution) == (
        "thing",
        "late_plugin_mod:VALUE",
        "late_plugin",
    )
    assert "late_plugin_mod" not in sys.modules
    assert found.load() == 42
    distributions.add("later-plugin", {"ompy.test.late": {"other": "late_plugin_mod"}})
    assert sorted(ep.name for ep in entry_points("ompy.test.late")) == ["other", "thing"]


def test_a_distribution_earlier_on_the_path_hides_a_later_copy(tmp_path, monkeypatch):
    for where, target in (("first", "mod_a:x"), ("second", "mod_b:y")):
        info = tmp_path / where / "Shadow.Pkg-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "entry_points.txt").write_text(f"[ompy.test.shadow]\nplug = {target}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "second"))
    monkeypatch.syspath_prepend(str(tmp_path / "first"))
    assert [ep.value for ep in entry_points("ompy.test.shadow")] == ["mod_a:x"]
    theirs = importlib.metadata.entry_points(group="ompy.test.shadow")
    assert [ep.value for ep in theirs] == ["mod_a:x"]


def test_distributions_inside_a_zip_file_are_read_through_importlib_metadata(tmp_path, monkeypatch):
    archive = tmp_path / "plugins.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(
            "zipped_pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped-pkg\n"
        )
        zf.writestr("zipped_pkg-1.0.dist-info/entry_points.txt", "[ompy.test.zip]\nz = zmod:z\n")
    monkeypatch.syspath_prepend(str(archive))
    assert [(ep.name, ep.value) for ep in entry_points("ompy.test.zip")] == [("z", "zmod:z")]


def test_parse_reads_sections_and_skips_comments_and_stray_lines():
    text = """
        stray = before:any_section
        # a comment
        [ompy.a]
        one = pkg.mod:Obj.attr
          two=pkg.other

        not an entry point
        [ompy.b]
        three = pkg:three [extra]
    """
    assert parse(text) == {
        "ompy.a": [("one", "pkg.mod:Obj.attr"), ("two", "pkg.other")],
        "ompy.b": [("three", "pkg:three [extra]")],
    }


def test_load_target_follows_attribute_paths_and_ignores_extras():
    assert load_target("os.path:join") is __import__("os").path.join
    import collections

    assert (
        load_target("collections:OrderedDict.fromkeys [speed]") == collections.OrderedDict.fromkeys
    )
    assert load_target("json") is sys.modules["json"]


def test_load_target_names_a_malformed_target():
    with pytest.raises(ValueError, match="'not a target!' is not of the form"):
        load_target("not a target!")
    with pytest.raises(ModuleNotFoundError, match="no_such_module_xyz"):
        load_target("no_such_module_xyz:thing")


def test_listing_imports_neither_stevedore_nor_importlib_metadata():
    code = (
        "import sys; from ompy.opal.mca import list_candidates; list_candidates('ompy.mca.ess'); "
        "print(sorted(m for m in ('stevedore', 'importlib.metadata') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
