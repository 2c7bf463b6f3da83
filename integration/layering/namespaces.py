"""Check the PEP 420 rules of the tree's distributions.

- ``ompy``, ``ompy/mca`` and ``ompy/mca/<fw>`` have no ``__init__.py``: one stray
  ``__init__.py`` in any distribution turns the shared namespace into a regular package owned by
  that distribution, and every other layer or component silently becomes unimportable.
- Every distribution ships the PEP 561 marker ``py.typed`` in its own package directory
  (``ompy/opal/``, ``ompy/mca/btl/tcp/``, ...; a distribution with a module directly in the
  namespace, as ``ompy/MPI.py``, also in ``ompy/``), so type checkers read the installed
  packages' annotations; the lint session's mypy run depends on it.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MARKER = "py.typed"


def violations(repo: Path = REPO) -> list[Path]:
    """Namespace directories that have an ``__init__.py``."""
    found = []
    for ompy in sorted(repo.glob("packages/**/src/ompy")):
        candidates = [ompy / "__init__.py", ompy / "mca" / "__init__.py"]
        candidates += sorted((ompy / "mca").glob("*/__init__.py"))
        found += [path for path in candidates if path.exists()]
    return found


def package_directories(ompy: Path) -> list[Path]:
    """The directories of one distribution's ``src/ompy`` that the distribution owns."""
    owned = [path for path in sorted(ompy.iterdir()) if path.is_dir() and path.name != "mca"]
    owned += [path for path in sorted(ompy.glob("mca/*/*")) if path.is_dir()]
    if any(path.suffix == ".py" for path in ompy.iterdir()):
        owned.append(ompy)  # a module in the namespace itself (ompy/MPI.py)
    return [path for path in owned if path.name != "__pycache__"]


def missing_markers(repo: Path = REPO) -> list[Path]:
    """Package directories of the tree's distributions without a ``py.typed`` marker."""
    found = []
    for ompy in sorted(repo.glob("packages/**/src/ompy")):
        found += [path for path in package_directories(ompy) if not (path / MARKER).exists()]
    return found


def main() -> int:
    bad = violations()
    for path in bad:
        print(f"{path.relative_to(REPO)}: namespace directories must not have __init__.py")
    unmarked = missing_markers()
    for path in unmarked:
        print(f"{path.relative_to(REPO)}: a distribution's package directory needs {MARKER}")
    return 1 if bad or unmarked else 0


if __name__ == "__main__":
    sys.exit(main())
