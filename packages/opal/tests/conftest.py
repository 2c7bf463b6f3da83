"""Fixtures for opal's tests: throw-away plug-in distributions, installed for one test only."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from ompy.opal.mca.entry_points import forget as forget_entry_points


class ThrowawayDistributions:
    """Writes modules and ``*.dist-info`` metadata into a private ``sys.path`` entry.

    This is what ``pip install`` leaves behind, minus the copying, so discovery sees exactly what
    it would see for a real third-party package.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: set[str] = set()

    def add(
        self,
        name: str,
        entry_points: dict[str, dict[str, str]],
        modules: dict[str, str] | None = None,
        version: str = "1.0",
    ) -> None:
        for relative, source in (modules or {}).items():
            path = self.root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(source))
            self.modules.add(relative.split("/")[0].removesuffix(".py"))
        info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        lines = []
        for group, entries in entry_points.items():
            lines.append(f"[{group}]")
            lines.extend(f"{key} = {target}" for key, target in entries.items())
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        forget_entry_points()


@pytest.fixture
def distributions(tmp_path, monkeypatch) -> ThrowawayDistributions:
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    forget_entry_points()
    installed = ThrowawayDistributions(root)
    yield installed
    forget_entry_points()
    for name in list(sys.modules):
        if name.split(".")[0] in installed.modules:
            del sys.modules[name]
