"""The layering checks can fail: each deliberately violating fixture tree is caught.

A contract that never fails proves nothing, so each rule is shown broken once here, on a small
tree of namespace portions shaped exactly like the real packages.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


contracts = load("contracts")
namespaces = load("namespaces")


def write_tree(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


CLEAN = {
    "opal/src/ompy/opal/__init__.py": "",
    "opal/src/ompy/opal/core.py": "X = 1\n",
    "orte/src/ompy/orte/__init__.py": "",
    "orte/src/ompy/orte/run.py": "from ompy.opal import core\n",
    "ompi/src/ompy/ompi/__init__.py": "",
    "ompi/src/ompy/ompi/api.py": "from ompy.orte import run\n",
    "btl-a/src/ompy/mca/btl/a/__init__.py": "from ompy.opal import core\n",
    "btl-b/src/ompy/mca/btl/b/__init__.py": "from ompy.opal import core\n",
}


def lint(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess:
    write_tree(tmp_path, files)
    src_dirs = sorted(tmp_path.glob("*/src"))
    config = tmp_path / "importlinter.ini"
    config.write_text(contracts.render(*contracts.root_packages(src_dirs)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(d) for d in src_dirs)}
    lint_imports = Path(sys.executable).parent / "lint-imports"
    return subprocess.run(
        [str(lint_imports), "--config", str(config), "--no-cache"],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )


def test_a_clean_tree_keeps_every_contract(tmp_path):
    result = lint(tmp_path, CLEAN)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 kept, 0 broken" in result.stdout


@pytest.mark.parametrize(
    ("violation", "broken_contract"),
    [
        ({"opal/src/ompy/opal/bad.py": "import ompy.orte.run\n"}, "Layers depend downwards"),
        ({"orte/src/ompy/orte/bad.py": "from ompy.ompi import api\n"}, "Layers depend downwards"),
        ({"ompi/src/ompy/ompi/bad.py": "import ompy.mca.btl.a\n"}, "No layer imports a component"),
        ({"btl-b/src/ompy/mca/btl/b/x.py": "import ompy.mca.btl.a\n"}, "Components do not import"),
    ],
)
def test_each_violation_breaks_its_contract(tmp_path, violation, broken_contract):
    result = lint(tmp_path, {**CLEAN, **violation})
    assert result.returncode != 0
    assert f"{broken_contract}" in result.stdout
    assert "BROKEN" in result.stdout


def test_a_stray_namespace_init_is_reported(tmp_path):
    write_tree(tmp_path, {**CLEAN, "packages/btl-a/src/ompy/mca/btl/__init__.py": ""})
    (bad,) = namespaces.violations(tmp_path)
    assert bad.as_posix().endswith("src/ompy/mca/btl/__init__.py")


def test_the_real_tree_has_no_namespace_inits():
    assert namespaces.violations() == []


def test_a_package_directory_without_py_typed_is_reported(tmp_path):
    marked = {
        "packages/opal/src/ompy/opal/py.typed": "",
        "packages/ompi/src/ompy/ompi/py.typed": "",
        "packages/ompi/src/ompy/py.typed": "",
        "packages/btl-a/src/ompy/mca/btl/a/py.typed": "",
    }
    tree = {
        "packages/opal/src/ompy/opal/__init__.py": "",
        "packages/ompi/src/ompy/ompi/__init__.py": "",
        "packages/ompi/src/ompy/MPI.py": "",
        "packages/btl-a/src/ompy/mca/btl/a/__init__.py": "",
        "packages/btl-b/src/ompy/mca/btl/b/__init__.py": "",
        **marked,
    }
    write_tree(tmp_path, tree)
    assert [p.relative_to(tmp_path).as_posix() for p in namespaces.missing_markers(tmp_path)] == [
        "packages/btl-b/src/ompy/mca/btl/b"
    ]
    (tmp_path / "packages/ompi/src/ompy/py.typed").unlink()
    assert [p.relative_to(tmp_path).as_posix() for p in namespaces.missing_markers(tmp_path)] == [
        "packages/btl-b/src/ompy/mca/btl/b",
        "packages/ompi/src/ompy",
    ]


def test_every_distribution_of_the_real_tree_ships_py_typed():
    assert namespaces.missing_markers() == []
