"""File-backed segments: created exclusively and privately, shared by every process that attaches.

These tests drive the framework's shared file-backed module directly on a temporary directory,
so they need no component package.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import uuid

import attrs
import numpy as np
import pytest

from ompy.opal.mca.shmem import (
    InvalidSegmentNameError,
    InvalidSegmentSizeError,
    SegmentBusyError,
    SegmentDescriptor,
    SegmentDetachedError,
    SegmentExistsError,
    SegmentNotFoundError,
    SegmentSpaceError,
    ShmemError,
    WrongComponentError,
    WrongNodeError,
)
from ompy.opal.mca.shmem.base import FileSegmentModule
from ompy.opal.mca.shmem.segment import this_node


def segment_name() -> str:
    return f"ompy-test-{uuid.uuid4().hex}"


@pytest.fixture
def directory(tmp_path):
    """A segment directory that must be empty again when the test ends."""
    where = tmp_path / "segments"
    where.mkdir()
    yield where
    assert sorted(os.listdir(where)) == [], "a test left segment files behind"


@pytest.fixture
def module(directory):
    return FileSegmentModule("testing", directory)


def test_create_maps_a_zeroed_segment_of_the_requested_size(module, directory):
    name = segment_name()
    with module.create(name, 1000) as segment:
        assert segment.size == 1000
        assert len(segment.buffer) == 1000
        assert not segment.array().any()
        assert segment.descriptor.path == str(directory / name)
        assert segment.descriptor.component == "testing"
        assert os.path.getsize(directory / name) == 1000
        segment.unlink()


def test_create_is_private_to_the_user_whatever_the_umask(module, directory):
    name = segment_name()
    old = os.umask(0o277)  # would make the file read-only for its owner
    try:
        segment = module.create(name, 64)
    finally:
        os.umask(old)
    with segment:
        assert stat.S_IMODE(os.stat(directory / name).st_mode) == 0o600
        segment.unlink()


def test_attached_segments_share_their_bytes(module):
    with module.create(segment_name(), 4096) as created:
        with module.attach(created.descriptor) as attached:
            created.buffer[10:15] = b"hello"
            assert bytes(attached.buffer[10:15]) == b"hello"
            attached.array(np.float64, offset=8, count=1)[0] = 2.5
            assert created.array(np.float64, offset=8, count=1)[0] == 2.5
        created.unlink()


def test_another_process_attaching_from_the_published_dict_sees_the_same_bytes(module):
    child = """
import json, sys
from ompy.opal.mca.shmem import SegmentDescriptor
from ompy.opal.mca.shmem.base import FileSegmentModule
from ompy.opal.mca.shmem.segment import this_node

descriptor = SegmentDescriptor.from_dict(json.loads(sys.argv[1]))
with FileSegmentModule("testing", "/nonexistent").attach(descriptor) as segment:
    view = segment.array()
    print(bytes(view[:5]).decode())
    view[100:105] = list(b"world")
    del view
"""
    with module.create(segment_name(), 4096) as segment:
        segment.buffer[:5] = b"hello"
        published = json.dumps(segment.descriptor.to_dict())
        result = subprocess.run(
            [sys.executable, "-c", child, published],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "hello"
        assert bytes(segment.buffer[100:105]) == b"world"
        segment.unlink()


def test_create_refuses_an_existing_name_and_leaves_it_alone(module):
    name = segment_name()
    with module.create(name, 16) as first:
        first.buffer[:3] = b"old"
        with pytest.raises(SegmentExistsError, match=f"{name}.*already exists") as caught:
            module.create(name, 16)
        assert isinstance(caught.value, FileExistsError)
        assert bytes(first.buffer[:3]) == b"old"
        with module.attach(first.descriptor) as again:
            assert bytes(again.buffer[:3]) == b"old"
        first.unlink()


@pytest.mark.parametrize("name", ["segment", "ompy-a/b", "../ompy-x", "ompy-"])
def test_create_refuses_unsafe_names_before_touching_the_file_system(module, directory, name):
    with pytest.raises(InvalidSegmentNameError):
        module.create(name, 16)
    assert os.listdir(directory) == []


@pytest.mark.parametrize("size", [0, -1, 1.5, True, "16"])
def test_create_refuses_sizes_that_are_not_positive_ints(module, size):
    with pytest.raises(InvalidSegmentSizeError, match="segment size"):
        module.create(segment_name(), size)


def test_no_room_for_the_segment_is_a_clear_error_and_leaves_no_file(module, monkeypatch):
    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    name = segment_name()
    with pytest.raises(SegmentSpaceError, match=f"no room for shared-memory segment '{name}'"):
        module.create(name, 1 << 20)


def test_a_file_system_that_cannot_reserve_space_still_gets_its_segment(module, monkeypatch):
    def unsupported(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(os, "posix_fallocate", unsupported)
    with module.create(segment_name(), 4096) as segment:
        segment.buffer[4095] = 1
        segment.unlink()


def test_after_unlink_attach_fails_clearly_but_mappings_live_on(module):
    name = segment_name()
    with module.create(name, 64) as segment:
        segment.unlink()
        with pytest.raises(SegmentNotFoundError, match=f"{name}.*no longer exists") as caught:
            module.attach(segment.descriptor)
        assert isinstance(caught.value, FileNotFoundError)
        segment.buffer[:2] = b"ok"
        assert bytes(segment.buffer[:2]) == b"ok"


def test_unlinking_twice_is_an_error_unless_missing_is_fine(module):
    with module.create(segment_name(), 64) as segment:
        segment.unlink()
        with pytest.raises(SegmentNotFoundError):
            segment.unlink()
        module.unlink(segment.descriptor, missing_ok=True)


def test_a_descriptor_of_another_component_is_refused(module, directory):
    with module.create(segment_name(), 64) as segment:
        other = FileSegmentModule("other", directory)
        with pytest.raises(WrongComponentError, match="made by the shmem component 'testing'"):
            other.attach(segment.descriptor)
        with pytest.raises(WrongComponentError):
            other.unlink(segment.descriptor)
        segment.unlink()


def test_a_descriptor_from_another_node_is_refused(module):
    with module.create(segment_name(), 64) as segment:
        foreign = attrs.evolve(segment.descriptor, node="some-other-node")
        with pytest.raises(WrongNodeError, match="created on node 'some-other-node'"):
            module.attach(foreign)
        with pytest.raises(WrongNodeError):
            module.unlink(foreign)
        segment.unlink()


def test_attach_refuses_a_file_shorter_than_published(module):
    with module.create(segment_name(), 64) as segment:
        inflated = attrs.evolve(segment.descriptor, size=65)
        with pytest.raises(ShmemError, match="64 bytes long but was published as 65"):
            module.attach(inflated)
        segment.unlink()


def test_attach_refuses_a_symbolic_link(module, directory, tmp_path):
    target = tmp_path / "target"
    target.write_bytes(b"\0" * 64)
    name = segment_name()
    (directory / name).symlink_to(target)
    descriptor = SegmentDescriptor("testing", name, str(directory / name), 64, this_node())
    with pytest.raises(ShmemError, match="symbolic link"):
        module.attach(descriptor)
    module.unlink(descriptor)


def test_detach_refuses_while_views_are_alive_and_stays_usable(module):
    with module.create(segment_name(), 64) as segment:
        array = segment.array()
        view = segment.buffer
        with pytest.raises(SegmentBusyError, match="still alive") as caught:
            segment.detach()
        assert isinstance(caught.value, BufferError)
        assert segment.attached
        array[0] = 7
        assert view[0] == 7
        del array
        view.release()
        segment.detach()
        assert not segment.attached
        with pytest.raises(SegmentDetachedError, match="was detached"):
            segment.buffer  # noqa: B018
        with pytest.raises(SegmentDetachedError):
            segment.array()
        segment.detach()  # twice is harmless
        segment.unlink()  # unlinking needs no mapping


def test_leaving_the_with_block_detaches(module):
    with module.create(segment_name(), 64) as segment:
        pass
    assert not segment.attached
    segment.unlink()


def test_leaving_the_with_block_with_views_alive_is_an_error(module):
    segment = module.create(segment_name(), 64)
    try:
        with pytest.raises(SegmentBusyError), segment:
            kept = segment.array()
        assert segment.attached
    finally:
        del kept
        segment.detach()
        segment.unlink()


def test_an_exception_leaving_the_with_block_is_not_hidden_by_live_views(module):
    segment = module.create(segment_name(), 64)
    segment.unlink()
    with pytest.raises(KeyError, match="the real problem"), segment:
        view = segment.array()  # kept alive by the traceback
        view[0] = 1
        raise KeyError("the real problem")


def test_array_views_cover_whole_items_from_an_offset(module):
    with module.create(segment_name(), 100) as segment:
        assert segment.array(np.float64).shape == (12,)
        assert segment.array(np.float64, offset=4).shape == (12,)
        assert segment.array(np.int32, offset=96).shape == (1,)
        assert segment.array(offset=100).shape == (0,)
        with pytest.raises(ValueError, match="offset 101 is outside segment"):
            segment.array(offset=101)
        with pytest.raises(ValueError, match=r"count 13 of float64 items .*at most 12 fit"):
            segment.array(np.float64, count=13)
        segment.unlink()
