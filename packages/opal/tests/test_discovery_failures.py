"""A framework description that cannot be loaded is reported, never fatal to the listing."""

from __future__ import annotations

import sys

import pytest
from stevedore import ExtensionManager

from ompy.opal.mca import LoadFailure, installed_frameworks

FRAMEWORKS_MODULE = """
from ompy.opal.mca import Cardinality, Framework

framework = Framework("discofine", "opal", "a framework that loads", (1, 0), Cardinality.ONE)
not_a_framework = "just a string"
"""


@pytest.fixture
def published(tmp_path, monkeypatch):
    """Publish one good, one missing and one wrong framework entry point on a private path."""
    (tmp_path / "disco_frameworks.py").write_text(FRAMEWORKS_MODULE)
    info = tmp_path / "disco_frameworks-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: disco-frameworks\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[ompy.frameworks]\n"
        "discofine = disco_frameworks:framework\n"
        "discomissing = disco_no_such_module:framework\n"
        "discowrong = disco_frameworks:not_a_framework\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    ExtensionManager.ENTRY_POINT_CACHE.clear()
    yield
    ExtensionManager.ENTRY_POINT_CACHE.clear()
    sys.modules.pop("disco_frameworks", None)


def test_broken_frameworks_are_recorded_and_the_good_ones_listed(published):
    failures: list[LoadFailure] = []
    names = [framework.name for framework in installed_frameworks(failures)]
    assert "discofine" in names
    assert "discomissing" not in names
    assert "discowrong" not in names
    by_name = {failure.name: failure for failure in failures}
    missing = by_name["discomissing"]
    assert missing.target == "disco_no_such_module:framework"
    assert "ModuleNotFoundError" in missing.reason
    assert "disco_no_such_module" in missing.reason
    assert "not an ompy Framework" in by_name["discowrong"].reason


def test_without_a_failure_list_broken_frameworks_become_warnings(published):
    with pytest.warns(RuntimeWarning, match="framework 'discomissing'.*cannot be loaded"):
        names = [framework.name for framework in installed_frameworks()]
    assert "discofine" in names
