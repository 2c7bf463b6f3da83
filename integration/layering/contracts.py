"""Write the import-linter contracts for whatever packages the tree holds.

The contracts are generated rather than hand-written because every component is a root package
of its own (``ompy.mca.<fw>.<name>`` lives inside PEP 420 namespaces) and components come and go:
a hand-kept list would silently stop checking a new one.

    python integration/layering/contracts.py OUT.ini [SRC_DIR ...]

Without SRC_DIRs the ``src`` directories of every package under ``packages/`` are scanned.
"""

from __future__ import annotations

import sys
from pathlib import Path

LAYERS = ("ompy.ompi", "ompy.orte", "ompy.opal")
REPO = Path(__file__).resolve().parents[2]


def source_dirs(repo: Path = REPO) -> list[Path]:
    """The ``src`` directory of every distribution in the repository."""
    return sorted(path.parent for path in repo.glob("packages/**/src/ompy"))


def root_packages(src_dirs: list[Path]) -> tuple[list[str], list[str]]:
    """Layer packages and component packages found under the given ``src`` directories."""
    layers, components = [], []
    for src in src_dirs:
        for layer in LAYERS:
            if (src / layer.replace(".", "/") / "__init__.py").is_file():
                layers.append(layer)
        for init in sorted(src.glob("ompy/mca/*/*/__init__.py")):
            framework, name = init.parent.parent.name, init.parent.name
            components.append(f"ompy.mca.{framework}.{name}")
    return layers, components


def render(layers: list[str], components: list[str]) -> str:
    """The import-linter configuration for these root packages."""
    roots = "\n".join(f"    {name}" for name in layers + components)
    present = [layer for layer in LAYERS if layer in layers]
    sections = [
        f"[importlinter]\nroot_packages =\n{roots}\ninclude_external_packages = False\n",
        "[importlinter:contract:layers]\nname = Layers depend downwards only "
        "(ompi -> orte -> opal)\ntype = layers\nlayers =\n"
        + "\n".join(f"    {layer}" for layer in present)
        + "\n",
    ]
    if components:
        sections.append(
            "[importlinter:contract:layers-do-not-import-components]\n"
            "name = No layer imports a component\ntype = forbidden\nsource_modules =\n"
            + "\n".join(f"    {layer}" for layer in present)
            + "\nforbidden_modules =\n"
            + "\n".join(f"    {c}" for c in components)
            + "\n"
        )
    if len(components) > 1:
        sections.append(
            "[importlinter:contract:components-are-independent]\n"
            "name = Components do not import each other\ntype = independence\nmodules =\n"
            + "\n".join(f"    {c}" for c in components)
            + "\n"
        )
    return "\n".join(sections)


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    out, *dirs = argv
    src_dirs = [Path(d) for d in dirs] or source_dirs()
    Path(out).write_text(render(*root_packages(src_dirs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
