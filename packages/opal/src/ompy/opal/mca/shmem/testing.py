"""A kit for testing shmem components, ompy's own and third parties' alike.

A shmem component is only right if a *second process* sees the bytes the first one wrote, so
every component's tests need the same pieces: a parameter registry that sees nothing but the
test's settings, unique segment names, a child process that attaches to a published segment,
and a check that no child process was left behind.  They live here, next to the framework, so a
component package tests itself the same way whether it ships with ompy or on a package index.
No test framework is imported: these are plain functions for pytest fixtures to call.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterable
from pathlib import Path

from ..params import Registry
from .segment import SegmentDescriptor

#: Run in the child process: attach to the published segment, print which component made it and
#: its first five bytes, then write ``world`` at offset 100 for the parent to read back.  The
#: child selects whatever shmem component it prefers: attaching must route by the descriptor.
_ATTACH_AND_ANSWER = """
import json, sys
from ompy.opal.mca.shmem import SegmentDescriptor
from ompy.opal.mca.shmem.base import attach

with attach(SegmentDescriptor.from_dict(json.loads(sys.argv[1]))) as segment:
    print(segment.descriptor.component, bytes(segment.buffer[:5]).decode())
    segment.buffer[100:105] = b"world"
"""

#: Prefix of the names :func:`unique_segment_name` makes (so a test can list its own segments).
TEST_SEGMENT_PREFIX = "ompy-test-"


def isolated_registry(components_under_test: Iterable[str], **settings: str) -> Registry:
    """A registry that sees only ``settings`` as ``OMPY_MCA_*`` values (no parameter files).

    Without an explicit ``shmem`` setting, every installed shmem component not named in
    ``components_under_test`` is excluded, so that what a test selects does not depend on
    whichever other component (a third party's, or one another test installs for a while)
    happens to be installed.
    """
    wanted = set(components_under_test)
    foreign = sorted(
        entry.name
        for entry in importlib.metadata.entry_points(group="ompy.mca.shmem")
        if entry.name not in wanted
    )
    if foreign and "shmem" not in settings:
        settings["shmem"] = "^" + ",".join(foreign)
    return Registry(environ={f"OMPY_MCA_{k}": v for k, v in settings.items()}, files=[])


def unique_segment_name() -> str:
    """A segment name no other test run uses, starting with :data:`TEST_SEGMENT_PREFIX`."""
    return f"{TEST_SEGMENT_PREFIX}{uuid.uuid4().hex}"


def attach_in_another_process(
    descriptor: SegmentDescriptor, *, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Attach to ``descriptor`` from a fresh interpreter and let it answer through the segment.

    The child prints ``<component> <first five bytes>`` and writes ``b"world"`` at offset 100;
    on failure its exit status is non-zero and the error is on its stderr.  The child's
    environment has no ``OMPY_*`` variable, so it selects as a plain program would.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPY_")}
    return subprocess.run(
        [sys.executable, "-c", _ATTACH_AND_ANSWER, json.dumps(descriptor.to_dict())],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def child_processes() -> list[int]:
    """Processes whose parent is this one (read from Linux /proc; empty where there is none)."""
    if not os.path.isdir("/proc"):
        return []
    mine = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid():
                mine.append(int(entry))
    return mine
