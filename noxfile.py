"""Every check the project runs, locally and in CI: ``python3 -m nox`` runs the default sessions.

Packages are discovered, not listed: any directory under ``packages/`` with a ``pyproject.toml``
is a distribution, so a new component is linted, isolated and tested without editing this file.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
#: pytest runs as ``python -m pytest`` so that the repository root is on ``sys.path``: tests that
#: start workers with multiprocessing's spawn method refer to them by module path.
TEST_TOOLS = ["pytest>=8", "pytest-timeout", "hypothesis", "pip", "hatchling", "import-linter"]
#: Pinned: a new ruff or mypy must not turn main red.
LINT_TOOLS = ["ruff==0.17.6", "mypy==2.4.1", "import-linter"]

nox.options.default_venv_backend = "uv"
# Every rank is a fresh interpreter: without bytecode caches each one compiles numpy, click and
# ompy from source (machines that set PYTHONDONTWRITEBYTECODE never write them), which doubles
# the start-up of every job the tests launch.  Installed packages get compiled by uv; the
# editable sources of this tree by compile_sources() below.
os.environ.setdefault("UV_COMPILE_BYTECODE", "1")
nox.options.sessions = ["lint", "isolation", "tests"]
nox.options.error_on_missing_interpreters = True


def _distributions() -> dict[str, Path]:
    """Distribution name -> its directory, for every package in the tree."""
    found = {}
    for pyproject in sorted(ROOT.glob("packages/**/pyproject.toml")):
        name = tomllib.loads(pyproject.read_text())["project"]["name"]
        found[name] = pyproject.parent
    return found


DISTRIBUTIONS = _distributions()


def _local_requirements(name: str) -> list[str]:
    """A distribution and, transitively, the in-tree distributions it declares or tests with."""
    seen: list[str] = []

    def visit(dist: str) -> None:
        if dist in seen:
            return
        seen.append(dist)
        project = tomllib.loads((DISTRIBUTIONS[dist] / "pyproject.toml").read_text())
        for requirement in project["project"].get("dependencies", []):
            dep = requirement.split("~")[0].split(">")[0].split("=")[0].split("<")[0].strip()
            if dep in DISTRIBUTIONS:
                visit(dep)
        for extra in project.get("tool", {}).get("ompy", {}).get("test-with", []):
            visit(extra)

    visit(name)
    return seen


def compile_sources(session: nox.Session) -> None:
    """Write the bytecode caches of the tree's own (editable) sources."""
    session.run("python", "-m", "compileall", "-q", "-j", "0", "packages", "integration")


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff, the PEP 420/561 namespace rules, the import-linter layering contracts, and mypy.

    mypy (configured in ``mypy.ini``) checks the framework interfaces and the MPI API, found as
    installed packages through their ``py.typed`` markers.
    """
    session.install(*LINT_TOOLS, *(f"-e{path}" for path in DISTRIBUTIONS.values()))
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("python", "integration/layering/namespaces.py")
    config = Path(session.create_tmp()) / "importlinter.ini"
    session.run("python", "integration/layering/contracts.py", str(config))
    session.run("lint-imports", "--config", str(config))
    session.run("mypy", "--config-file", str(ROOT / "mypy.ini"))


@nox.session
@nox.parametrize("distribution", list(DISTRIBUTIONS))
def isolation(session: nox.Session, distribution: str) -> None:
    """Install one distribution with only what it declares, and run its own tests there.

    This is what catches a lower layer importing a higher one: the higher layer simply is not
    installed, so the import fails.
    """
    local = [str(DISTRIBUTIONS[name]) for name in _local_requirements(distribution)]
    session.install(*TEST_TOOLS, *local)
    tests = DISTRIBUTIONS[distribution] / "tests"
    if not tests.is_dir():
        session.error(f"{distribution} has no tests/ directory")
    session.run("python", "-m", "pytest", "-q", str(tests), *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Everything installed together: every unit test and every multi-process test."""
    session.install(*TEST_TOOLS, *(f"-e{path}" for path in DISTRIBUTIONS.values()))
    compile_sources(session)
    session.run("python", "-m", "pytest", "-q", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """Install everything and run the demo job: four ranks pass a token around a ring and reduce."""
    session.install(*(f"-e{path}" for path in DISTRIBUTIONS.values()))
    compile_sources(session)
    session.run("ompy", "--version")
    session.run("ompy", "run", "-n", "4", "--oversubscribe", "python", "-m", "ompy.ompi.demo")
