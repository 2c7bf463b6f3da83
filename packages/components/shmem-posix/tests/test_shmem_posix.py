"""The posix shmem component: segments in /dev/shm, preferred wherever /dev/shm is usable."""

from __future__ import annotations

import importlib.metadata
import os
import stat
from pathlib import Path

import pytest

from ompy.mca.shmem.posix import PosixShmemComponent
from ompy.opal.mca import NoComponentError
from ompy.opal.mca.params import Registry
from ompy.opal.mca.shmem import SegmentExistsError, SegmentNotFoundError
from ompy.opal.mca.shmem.base import attach, reset_selection, select_module
from ompy.opal.mca.shmem.testing import (
    TEST_SEGMENT_PREFIX,
    attach_in_another_process,
    child_processes,
    isolated_registry,
    unique_segment_name,
)

SHM = Path("/dev/shm")

pytestmark = pytest.mark.skipif(not SHM.is_dir(), reason="this system has no /dev/shm")


def registry(**settings: str) -> Registry:
    """Only ``settings``, and no shmem component but ompy's own two unless a test names one."""
    return isolated_registry(("posix", "mmap"), **settings)


def ours() -> set[str]:
    return {name for name in os.listdir(SHM) if name.startswith(TEST_SEGMENT_PREFIX)}


def mmap_installed() -> bool:
    return bool(importlib.metadata.entry_points(group="ompy.mca.shmem", name="mmap"))


@pytest.fixture(autouse=True)
def clean():
    """Each test selects afresh and must leave /dev/shm and the process table as it found them."""
    before = ours()
    reset_selection()
    yield
    reset_selection()
    assert ours() == before, "a test left segments in /dev/shm"
    assert child_processes() == [], "a test left child processes behind"


@pytest.fixture
def posix():
    return select_module(registry(shmem="posix"))


def test_posix_is_the_default_choice():
    assert select_module(registry()).component == "posix"


def test_segments_are_files_in_dev_shm_readable_only_by_their_owner(posix):
    name = unique_segment_name()
    with posix.create(name, 8192) as segment:
        path = SHM / name
        assert segment.descriptor.path == str(path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert path.stat().st_size == 8192
        segment.unlink()
        assert not path.exists()


def test_another_process_attaches_and_shares_the_bytes(posix):
    with posix.create(unique_segment_name(), 4096) as segment:
        segment.buffer[:5] = b"hello"
        result = attach_in_another_process(segment.descriptor)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == ["posix", "hello"]
        assert bytes(segment.buffer[100:105]) == b"world"
        segment.unlink()


def test_create_refuses_a_name_that_exists(posix):
    name = unique_segment_name()
    with posix.create(name, 64) as segment:
        with pytest.raises(SegmentExistsError, match=f"/dev/shm/{name} already exists"):
            posix.create(name, 64)
        segment.unlink()


def test_after_unlink_attaching_fails_clearly_here_and_in_another_process(posix):
    name = unique_segment_name()
    with posix.create(name, 64) as segment:
        segment.unlink()
        descriptor = segment.descriptor
    with pytest.raises(SegmentNotFoundError, match=f"'{name}' no longer exists"):
        attach(descriptor)
    result = attach_in_another_process(descriptor)
    assert result.returncode != 0
    assert "SegmentNotFoundError" in result.stderr
    assert f"'{name}' no longer exists at /dev/shm/{name}" in result.stderr


def make_component(**settings: str) -> PosixShmemComponent:
    component = PosixShmemComponent(registry(**settings))
    component.register_params()
    return component


def test_without_a_usable_dev_shm_the_component_declines(monkeypatch, tmp_path):
    monkeypatch.setattr(PosixShmemComponent, "directory", tmp_path / "no-shm")
    component = make_component()
    assert component.query(None) is None
    assert component.decline_reason == f"{tmp_path / 'no-shm'} is not a directory"
    with pytest.raises(NoComponentError, match="no shmem component is able to run"):
        select_module(registry(shmem="posix"))


def test_with_too_little_room_in_dev_shm_the_component_declines():
    component = make_component(shmem_posix_min_free=str(2**62))
    assert component.query(None) is None
    assert "less than shmem_posix_min_free = 4611686018427387904" in component.decline_reason


def test_with_room_the_component_offers_its_priority():
    offer = make_component(shmem_posix_min_free="0", shmem_posix_priority="7").query(None)
    assert offer is not None
    assert offer.priority == 7
    assert offer.module.component == "posix"


@pytest.mark.skipif(not mmap_installed(), reason="needs ompy-shmem-mmap installed")
@pytest.mark.parametrize(
    ("settings", "chosen"),
    [
        ({}, "posix"),
        ({"shmem": "mmap"}, "mmap"),
        ({"shmem_posix_priority": "5"}, "mmap"),
        ({"shmem_mmap_priority": "60"}, "mmap"),
        ({"shmem_posix_priority": "5", "shmem_mmap_priority": "4"}, "posix"),
        ({"shmem_posix_min_free": str(2**62)}, "mmap"),
    ],
)
def test_against_mmap_posix_wins_unless_told_otherwise(settings, chosen):
    assert select_module(registry(**settings)).component == chosen
