"""The asymmetric fence: registration once per process, and a fence that degrades to nothing."""

from __future__ import annotations

import platform
import sys

import pytest

from ompy.opal import membarrier

ON_LINUX_X86 = sys.platform.startswith("linux") and platform.machine().lower() == "x86_64"


@pytest.fixture
def fresh_registration():
    membarrier.register.cache_clear()
    yield
    membarrier.register.cache_clear()


def test_the_process_registers_once_however_many_fences_it_makes(fresh_registration, monkeypatch):
    calls = []

    def syscall(number, command, flags, cpu):
        calls.append(command)
        return 0

    monkeypatch.setattr(membarrier, "_syscall", lambda: (324, syscall))
    fences = [membarrier.Fence() for _ in range(3)]
    assert all(fence.available for fence in fences)
    assert calls == [1 << 2], "one registration (MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED)"
    fences[0].heavy()
    assert calls[-1] == 1 << 1, "the heavy side is MEMBARRIER_CMD_GLOBAL_EXPEDITED"


def test_without_the_system_call_a_fence_is_unavailable_and_heavy_does_nothing(
    fresh_registration, monkeypatch
):
    monkeypatch.setattr(membarrier, "_syscall", lambda: None)
    fence = membarrier.Fence()
    assert not fence.available
    fence.heavy()


def test_a_refused_registration_leaves_the_fence_unavailable(fresh_registration, monkeypatch):
    monkeypatch.setattr(membarrier, "_syscall", lambda: (324, lambda *args: -1))
    assert membarrier.register() is False
    assert not membarrier.Fence().available


@pytest.mark.skipif(not ON_LINUX_X86, reason="membarrier numbers are known for Linux only")
def test_this_kernel_offers_global_expedited_barriers(fresh_registration):
    fence = membarrier.Fence()
    assert fence.available
    fence.heavy()
