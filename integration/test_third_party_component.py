"""A third-party component, round trip: pip install it, see it, select it, uninstall it.

The distribution under test (integration/third_party/shmem-tmpdir) is built and installed into
the running interpreter's environment exactly as a user would install a component from an
index: a separate project with its own pyproject.toml and entry point, depending only on the
public interface of ompy-opal.  ``ompy info`` must list it; the shmem framework must select it
when its priority beats the others or the user asks for it, and not when the user leaves it
out; its own tests must pass against the installed ompy; after ``pip uninstall`` every trace
of it must be gone.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TEMPLATE = Path(__file__).parent / "third_party" / "shmem-tmpdir"
DISTRIBUTION = "ompy-shmem-tmpdir"
OMPY = Path(sys.executable).parent / "ompy"

#: Select this process's shmem module, make a segment, share it through its descriptor.
SELECT = """
import json
from ompy.opal.mca.shmem import SegmentDescriptor
from ompy.opal.mca.shmem.base import attach, selection

chosen = selection()
with chosen.module.create("ompy-roundtrip-{tag}", 4096) as segment:
    segment.buffer[:2] = b"ok"
    with attach(SegmentDescriptor.from_dict(segment.descriptor.to_dict())) as peer:
        shared = bytes(peer.buffer[:2]).decode()
    segment.unlink()
print(json.dumps({{"component": chosen.component.name, "path": segment.descriptor.path,
                   "shared": shared}}))
"""


def run(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    done = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout}\n{done.stderr}"
    return done


def pip(*args: str) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], os.environ)


def installed() -> bool:
    try:
        importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    """The environment of every subprocess: no user settings, segments in a private directory."""
    segments = tmp_path / "segments"
    segments.mkdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OMPY_MCA_")}
    clean["OMPY_MCA_PARAM_FILES"] = ""
    clean["OMPY_MCA_shmem_tmpdir_directory"] = str(segments)
    return clean


@pytest.fixture
def source(tmp_path) -> Path:
    """A private copy of the distribution's sources, so building leaves the repository clean."""
    copy = tmp_path / "ompy-shmem-tmpdir"
    shutil.copytree(TEMPLATE, copy)
    return copy


def info(env: dict[str, str], *args: str) -> list[str]:
    return run([str(OMPY), "info", "--parsable", *args], env).stdout.splitlines()


def selected(env: dict[str, str], tag: str) -> dict[str, str]:
    done = run([sys.executable, "-c", SELECT.format(tag=tag)], env)
    return json.loads(done.stdout)


def test_install_show_select_exclude_uninstall(source, env, tmp_path):
    assert not installed(), (
        f"{DISTRIBUTION} is installed already; this test installs and removes it itself, so "
        f"uninstall it first (pip uninstall {DISTRIBUTION})"
    )
    segments = Path(env["OMPY_MCA_shmem_tmpdir_directory"])
    before = info(env)
    assert not any(line.startswith("mca:shmem:tmpdir:") for line in before)
    baseline = selected(env, "before")["component"]
    assert baseline != "tmpdir"

    try:
        pip("install", "--no-build-isolation", "--no-deps", "--quiet", str(source))

        # ompy info lists it, with its version, interface version and parameters.
        listing = info(env)
        assert "mca:shmem:tmpdir:version:1.0.0" in listing
        assert "mca:shmem:tmpdir:interface:1.0" in listing
        assert "mca:shmem:tmpdir:admitted:yes" in listing
        params = info(env, "--param", "shmem", "tmpdir")
        assert "mca:shmem:tmpdir:param:shmem_tmpdir_priority:value:5" in params
        assert (
            "mca:shmem:tmpdir:param:shmem_tmpdir_directory:source:"
            "environment:OMPY_MCA_shmem_tmpdir_directory"
        ) in params

        # Its default priority (5) is below the baseline's: installing it changes nothing.
        assert selected(env, "installed")["component"] == baseline

        # Raised above the others, it wins, and really works.
        eager = {**env, "OMPY_MCA_shmem_tmpdir_priority": "90"}
        assert selected(eager, "eager") == {
            "component": "tmpdir",
            "path": str(segments / "ompy-roundtrip-eager"),
            "shared": "ok",
        }

        # The user leaves it out despite its priority, or asks for it alone.
        excluded = {**eager, "OMPY_MCA_shmem": "^tmpdir"}
        assert selected(excluded, "excluded")["component"] == baseline
        assert "mca:shmem:tmpdir:admitted:no" in info(excluded)
        assert "mca:shmem:tmpdir:admitted:no" in info(env, "--mca", "shmem", baseline)
        only = {**env, "OMPY_MCA_shmem": "tmpdir"}
        assert selected(only, "only")["component"] == "tmpdir"

        # Its own tests pass against the installed ompy.
        run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--rootdir",
                str(source),
                "-c",
                str(source / "pyproject.toml"),
                str(source / "tests"),
            ],
            env,
        )
    finally:
        if installed():
            pip("uninstall", "--yes", "--quiet", DISTRIBUTION)

    assert not installed()
    after = info(env)
    assert not any(line.startswith("mca:shmem:tmpdir:") for line in after)
    assert selected(env, "after")["component"] == baseline
    # Asking for it by name now is a clear error, not a silent fallback.
    missing = subprocess.run(
        [str(OMPY), "info"],
        env={**env, "OMPY_MCA_shmem": "tmpdir"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert missing.returncode == 1
    assert "no shmem component named 'tmpdir' is installed" in missing.stderr
    assert list(segments.iterdir()) == []
    assert not list(source.glob("build")) and not list(source.glob("dist"))
