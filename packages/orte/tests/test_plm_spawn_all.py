"""The plm contract's ``spawn_all``: how the launcher hands a module a job's ranks.

The default starts the ranks one by one as the launcher takes them, and takes each request
(whose stdio the launcher makes when it is taken) only when that rank is started: a launcher
interrupted after ``k`` ranks has started ``k`` and made stdio for ``k``.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.job import Node, Placement
from ompy.orte.mca.plm import PlmModule, RankProcess, SpawnRequest, Stdio

NODE = Node("localhost", 8)


class Started(RankProcess):
    def __init__(self, rank: int) -> None:
        self.rank, self.pid = rank, 1000 + rank

    def exit_fd(self) -> int | None:
        return None

    def poll(self) -> int | None:
        return None

    def signal(self, signum: int) -> None:
        pass

    def release(self) -> None:
        pass


class OneByOne(PlmModule):
    """A module with only ``spawn``: the default ``spawn_all`` is what is tested."""

    def __init__(self, failing: int | None = None) -> None:
        self.started: list[int] = []
        self.failing = failing

    def check_nodes(self, nodes) -> None:
        pass

    def spawn(self, placement, argv, env, cwd, stdio) -> RankProcess:
        if placement.rank == self.failing:
            raise LaunchError(f"cannot start rank {placement.rank}", 127)
        self.started.append(placement.rank)
        return Started(placement.rank)


def requests(count: int, taken: list[int]) -> Iterator[SpawnRequest]:
    for rank in range(count):
        taken.append(rank)
        stdio = Stdio(subprocess.DEVNULL, None, None)
        placement = Placement(rank, NODE, 0, rank, count, False)
        yield SpawnRequest(placement, ["prog"], {"RANK": str(rank)}, Path("/"), stdio)


def test_each_request_is_taken_when_its_rank_starts_and_handles_come_in_order():
    plm, taken = OneByOne(), []
    processes = plm.spawn_all(requests(4, taken))
    assert taken == []  # nothing before the launcher asks
    first = next(processes)
    assert (first.rank, taken, plm.started) == (0, [0], [0])
    assert [p.rank for p in processes] == [1, 2, 3]
    assert taken == plm.started == [0, 1, 2, 3]


def test_a_launcher_that_stops_after_two_ranks_started_two():
    plm, taken = OneByOne(), []
    processes = plm.spawn_all(requests(5, taken))
    next(processes), next(processes)
    processes.close()
    assert taken == plm.started == [0, 1]


def test_a_rank_that_cannot_start_raises_at_its_turn_after_those_before_it():
    plm, taken = OneByOne(failing=2), []
    processes = plm.spawn_all(requests(4, taken))
    assert [next(processes).rank, next(processes).rank] == [0, 1]
    with pytest.raises(LaunchError, match="cannot start rank 2") as caught:
        next(processes)
    assert caught.value.exit_code == 127
    assert plm.started == [0, 1] and taken == [0, 1, 2]
    assert list(processes) == []  # and none after it
