"""The README's demo job: what a newcomer sees first is a real MPI program that checks itself."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.timeout(120)


def test_the_demo_passes_a_token_around_the_ring_and_reduces(ompy):
    result = ompy.run(["-n", "3", "--oversubscribe", sys.executable, "-m", "ompy.ompi.demo"])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("3 ranks on ")
    assert lines[1:4] == [
        "rank 0: got the token of rank 2",
        "rank 1: got the token of rank 0",
        "rank 2: got the token of rank 1",
    ]
    assert lines[4].startswith(
        "Allreduce of 1,000,000 doubles: every element is 6 (1 + 2 + ... + 3)"
    )
    assert result.stderr == ""
