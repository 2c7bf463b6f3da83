"""Check the PEP 420 rule: ``ompy``, ``ompy/mca`` and ``ompy/mca/<fw>`` have no ``__init__.py``.

One stray ``__init__.py`` in any distribution turns the shared namespace into a regular package
owned by that distribution, and every other layer or component silently becomes unimportable.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def violations(repo: Path = REPO) -> list[Path]:
    found = []
    for ompy in sorted(repo.glob("packages/**/src/ompy")):
        candidates = [ompy / "__init__.py", ompy / "mca" / "__init__.py"]
        candidates += sorted((ompy / "mca").glob("*/__init__.py"))
        found += [path for path in candidates if path.exists()]
    return found


def main() -> int:
    bad = violations()
    for path in bad:
        print(f"{path.relative_to(REPO)}: namespace directories must not have __init__.py")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
