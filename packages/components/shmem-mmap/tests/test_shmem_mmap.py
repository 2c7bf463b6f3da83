"""The mmap shmem component: segments are files in a directory, by default the session one."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ompy.mca.shmem.mmap import MmapShmemComponent
from ompy.opal.mca import NoComponentError
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import SegmentExistsError, SegmentNotFoundError
from ompy.opal.mca.shmem.base import attach, reset_selection, select_module
from ompy.opal.mca.shmem.testing import (
    attach_in_another_process,
    child_processes,
    isolated_registry,
    unique_segment_name,
)
from ompy.opal.session import SESSION_DIR_VAR, session_dir


@pytest.fixture
def job_session(tmp_path, monkeypatch):
    """A session directory as the launcher would give it; it must be empty when the test ends."""
    directory = tmp_path / "session"
    directory.mkdir()
    monkeypatch.setenv(SESSION_DIR_VAR, str(directory))
    reset_selection()
    yield directory
    reset_selection()
    assert os.listdir(directory) == [], "a test left segment files in the session directory"
    assert child_processes() == [], "a test left child processes behind"


@pytest.fixture
def mmap(job_session):
    return select_module(registry(shmem="mmap"))


def registry(**settings: str) -> Registry:
    """Only ``settings``, and no shmem component but ompy's own two unless a test names one."""
    return isolated_registry(("posix", "mmap"), **settings)


def test_selected_by_name_it_puts_segments_in_the_session_directory(mmap, job_session):
    assert mmap.component == "mmap"
    name = unique_segment_name()
    with mmap.create(name, 4096) as segment:
        assert segment.descriptor.path == str(job_session / name)
        assert stat.S_IMODE((job_session / name).stat().st_mode) == 0o600
        segment.unlink()


def test_a_higher_priority_makes_it_the_default(job_session):
    assert select_module(registry(shmem_mmap_priority="100")).component == "mmap"


def test_the_directory_parameter_chooses_where_segments_go(job_session, tmp_path):
    elsewhere = tmp_path / "big-disk"
    elsewhere.mkdir()
    module = select_module(registry(shmem="mmap", shmem_mmap_directory=str(elsewhere)))
    name = unique_segment_name()
    with module.create(name, 4096) as segment:
        assert segment.descriptor.path == str(elsewhere / name)
        assert os.listdir(job_session) == []
        segment.unlink()
    assert os.listdir(elsewhere) == []


def test_a_relative_directory_is_taken_from_the_working_directory(job_session, monkeypatch):
    monkeypatch.chdir(job_session.parent)
    component = MmapShmemComponent(registry(shmem_mmap_directory="session"))
    component.register_params()
    assert component.configured_directory() == job_session


def test_without_a_launcher_segments_go_to_the_private_session_directory(job_session, monkeypatch):
    monkeypatch.delenv(SESSION_DIR_VAR)
    module = select_module(registry(shmem="mmap"))
    private = session_dir()
    before = set(os.listdir(private))
    name = unique_segment_name()
    with module.create(name, 64) as segment:
        assert Path(segment.descriptor.path).parent == private
        segment.unlink()
    assert set(os.listdir(private)) == before


def test_another_process_attaches_through_the_component_that_made_the_segment(mmap):
    with mmap.create(unique_segment_name(), 4096) as segment:
        segment.buffer[:5] = b"hello"
        result = attach_in_another_process(segment.descriptor)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["mmap", "hello"]
        assert bytes(segment.buffer[100:105]) == b"world"
        segment.unlink()


def test_create_refuses_a_name_that_exists(mmap, job_session):
    name = unique_segment_name()
    with mmap.create(name, 64) as segment:
        with pytest.raises(SegmentExistsError, match=f"{job_session / name} already exists"):
            mmap.create(name, 64)
        segment.unlink()


def test_after_unlink_attaching_fails_clearly_here_and_in_another_process(mmap):
    name = unique_segment_name()
    with mmap.create(name, 64) as segment:
        segment.unlink()
        descriptor = segment.descriptor
    with pytest.raises(SegmentNotFoundError, match=f"'{name}' no longer exists"):
        attach(descriptor)
    result = attach_in_another_process(descriptor)
    assert result.returncode != 0
    assert f"SegmentNotFoundError: shared-memory segment '{name}' no longer exists" in (
        result.stderr
    )


@pytest.mark.parametrize("make", ["missing", "file"])
def test_an_unusable_directory_makes_the_component_decline(job_session, tmp_path, make):
    target = tmp_path / "target"
    if make == "file":
        target.write_text("not a directory")
    settings = {"shmem": "mmap", "shmem_mmap_directory": str(target)}
    component = MmapShmemComponent(registry(**settings))
    component.register_params()
    assert component.query(None) is None
    assert component.decline_reason == f"{target} is not a directory"
    with pytest.raises(NoComponentError, match="tried: mmap"):
        select_module(registry(**settings))
