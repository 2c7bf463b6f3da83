"""A framework or component class that cannot be used is reported, never fatal to the rest."""

from __future__ import annotations

import sys

import pytest

from ompy.opal.mca import (
    Cardinality,
    Framework,
    LoadFailure,
    installed_frameworks,
    open_framework,
)
from ompy.opal.mca.entry_points import forget as forget_entry_points
from ompy.opal.mca.params import Registry

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
    forget_entry_points()
    yield
    forget_entry_points()
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
    with pytest.warns(RuntimeWarning) as caught:
        names = [framework.name for framework in installed_frameworks()]
    assert "discofine" in names
    messages = [str(warning.message) for warning in caught]
    assert any(m.startswith("the framework 'discomissing' (disco_no_such_module") for m in messages)
    assert any(m.startswith("the framework 'discowrong'") for m in messages)


COMPONENTS_MODULE = """
from ompy.opal.mca import Component


class Nameless(Component):
    framework = "discofine"
    version = "1.0"
    interface_version = (1, 0)


class Unversioned(Component):
    framework = "discofine"
    name = "unversioned"
    version = "1.0"
    interface_version = "1.0"


class Fine(Component):
    framework = "discofine"
    name = "fine"
    version = "1.0"
    interface_version = (1, 3)
"""


@pytest.fixture
def components(tmp_path, monkeypatch):
    """Components of a test framework whose classes are incomplete, next to a correct one."""
    (tmp_path / "disco_components.py").write_text(COMPONENTS_MODULE)
    info = tmp_path / "disco_components-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: disco-components\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[ompy.mca.discofine]\n"
        "nameless = disco_components:Nameless\n"
        "unversioned = disco_components:Unversioned\n"
        "fine = disco_components:Fine\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    forget_entry_points()
    yield
    forget_entry_points()
    sys.modules.pop("disco_components", None)


def test_incomplete_component_classes_are_refused_with_what_is_missing(components):
    framework = Framework("discofine", "opal", "test", (1, 0), Cardinality.ONE)
    opened = open_framework(framework, Registry(environ={}, files=[]))
    assert [component.name for component in opened.components] == ["fine"]
    reasons = {failure.name: failure.reason for failure in opened.failures}
    assert "disco_components.Nameless" in reasons["nameless"]
    assert "does not set name" in reasons["nameless"]
    assert "declares interface_version '1.0'" in reasons["unversioned"]
    assert "(major, minor) tuple" in reasons["unversioned"]
