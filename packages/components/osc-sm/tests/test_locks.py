"""Record locks: two openers of one segment file exclude each other as two processes would."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from ompy.mca.osc.sm.locks import OFD, RangeLocks

pytestmark = pytest.mark.skipif(not OFD, reason="open-file-description locks are Linux-only")


@pytest.fixture
def path() -> Iterator[str]:
    fd, name = tempfile.mkstemp(prefix="ompy-osc-sm-test-", dir="/dev/shm")
    os.ftruncate(fd, 4096)
    os.close(fd)
    yield name
    os.unlink(name)


def test_exclusive_excludes_everyone_else(path: str) -> None:
    a, b = RangeLocks(path), RangeLocks(path)
    try:
        assert a.try_exclusive(10, 8)
        assert not b.try_exclusive(12, 1)
        assert not b.try_shared(17, 4)
        assert b.try_exclusive(18, 4)  # disjoint bytes: accumulates to other elements run on
        a.release(10, 8)
        assert b.try_shared(10, 8)
    finally:
        a.close()
        b.close()


def test_shared_locks_coexist_and_block_exclusive(path: str) -> None:
    a, b, c = RangeLocks(path), RangeLocks(path), RangeLocks(path)
    try:
        assert a.try_shared(5000, 3)  # past the end of the file: passive-target lock bytes
        assert b.try_shared(5001, 1)
        assert not c.try_exclusive(5001, 1)
        a.release(5000, 3)
        assert not c.try_exclusive(5001, 1)
        b.release(5001, 1)
        assert c.try_exclusive(5001, 1)
    finally:
        for locks in (a, b, c):
            locks.close()


def test_closing_releases_every_lock_and_refuses_further_use(path: str) -> None:
    a, b = RangeLocks(path), RangeLocks(path)
    try:
        assert a.try_exclusive(0, 100)
        a.close()
        a.close()  # idempotent
        assert b.try_exclusive(0, 100)
        with pytest.raises(RuntimeError, match="freed"):
            a.try_shared(0, 1)
    finally:
        b.close()
