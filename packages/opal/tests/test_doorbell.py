"""Doorbells live in a private directory: only this user's processes can reach them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ompy.opal.doorbell import SUN_PATH_MAX, Doorbell, DoorbellError
from ompy.opal.readiness import readable


@pytest.fixture
def private(tmp_path: Path) -> Path:
    folder = tmp_path / "session"
    folder.mkdir(mode=0o700)
    return folder


def test_a_ring_wakes_the_owner_and_close_removes_the_socket_file(private):
    bell, ringer = Doorbell("a", private), Doorbell("b", private)
    try:
        assert Path(bell.address).parent == private
        assert (os.stat(bell.address).st_mode & 0o777) == 0o600
        ringer.ring(bell.address)
        ringer.ring(bell.address)
        assert readable([bell.fd], 5) == [bell.fd]
        assert bell.drain() == 2
        assert bell.drain() == 0
    finally:
        bell.close()
        ringer.close()
    assert list(private.iterdir()) == []
    ringer.ring(bell.address)  # a vanished bell is ignored


@pytest.mark.parametrize("mode", [0o755, 0o770, 0o701])
def test_a_directory_other_users_can_enter_is_refused(tmp_path, mode):
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(mode)
    with pytest.raises(DoorbellError, match="mode 0700"):
        Doorbell("a", folder)
    assert list(folder.iterdir()) == []


def test_a_session_directory_too_deep_for_a_socket_path_still_works(private):
    deep = private
    while len(os.fsencode(deep)) <= SUN_PATH_MAX:
        deep = deep / ("d" * 40)
    deep.mkdir(parents=True, mode=0o700)
    for parent in [deep, *deep.parents]:
        if parent == private:
            break
        parent.chmod(0o700)
    bell, ringer = Doorbell("a", deep), Doorbell("b", deep)
    try:
        assert len(os.fsencode(bell.address)) > SUN_PATH_MAX
        ringer.ring(bell.address)
        assert readable([bell.fd], 5) == [bell.fd]
        assert bell.drain() == 1
    finally:
        bell.close()
        ringer.close()
    assert list(deep.iterdir()) == []


def test_the_socket_is_private_and_the_process_umask_is_never_touched(private, monkeypatch):
    """The umask is process-wide: changing it for a moment would give another thread's new
    files and directories that mode (a session directory created 0600 was seen)."""

    def no_umask(_mask: int) -> int:
        raise AssertionError("the doorbell changed the process umask")

    monkeypatch.setattr(os, "umask", no_umask)
    bell = Doorbell("umask", private)
    try:
        assert os.stat(bell.address).st_mode & 0o777 == 0o600
    finally:
        bell.close()
