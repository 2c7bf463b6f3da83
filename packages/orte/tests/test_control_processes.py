"""Real rank processes against a control server: modex at scale, events, stacks, orphans.

Each test starts ranks as subprocesses with the environment a launcher would give them
(:func:`environment_for_rank`) and checks that none of them outlives the test.
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ompy.orte.control import (
    ControlServer,
    RankAborted,
    RankConnected,
    RankException,
    RankFinalized,
    RankLost,
    environment_for_rank,
)
from ompy.orte.runtime import LOST_EXIT_CODE

pytestmark = pytest.mark.timeout(120)


def live_children() -> list[int]:
    """Pids of this process's children that have not been reaped (zombies excluded)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == me and fields[0] != "Z":
            found.append(int(entry.name))
    return found


class Launch:
    """A minimal launcher for tests: a control server plus rank processes."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.jobid, self.secret = f"j{secrets.token_hex(3)}", secrets.token_bytes(32)
        self.events: queue.Queue = queue.Queue()
        self.server: ControlServer | None = None
        self.procs: list[subprocess.Popen] = []

    def serve(self, size: int) -> ControlServer:
        self.server = ControlServer(self.jobid, size, self.secret, self.events.put)
        self.server.start()
        return self.server

    def rank_env(self, rank: int, size: int, address: tuple[str, int]) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OMPY_")}
        env.update(
            environment_for_rank(
                jobid=self.jobid,
                rank=rank,
                size=size,
                local_rank=rank,
                local_size=size,
                node_id=0,
                node_name="localhost",
                server=address,
                secret=self.secret,
                oversubscribed=size > (os.cpu_count() or 1),
                session_dir=str(self.tmp_path),
            )
        )
        return env

    def start(self, program: str, rank: int, size: int, address=None) -> subprocess.Popen:
        address = address or self.server.address
        proc = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(program)],
            env=self.rank_env(rank, size, address),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.procs.append(proc)
        return proc

    def events_until(self, done, timeout: float = 30.0) -> list:
        """Collect events until ``done(events)`` holds."""
        seen: list = []
        deadline = time.monotonic() + timeout
        while not done(seen):
            seen.append(self.events.get(timeout=max(0.0, deadline - time.monotonic())))
        return seen

    def cleanup(self) -> list[int]:
        """Kill what is still running; return the pids that were (a test failure)."""
        leftover = [proc.pid for proc in self.procs if proc.poll() is None]
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=10)
        if self.server is not None:
            self.server.close()
        return leftover


@pytest.fixture
def launch(tmp_path):
    # Children that existed before (say, multiprocessing's resource tracker started by an
    # earlier test in this interpreter) are not this test's to answer for.
    before = set(live_children())
    launcher = Launch(tmp_path)
    yield launcher
    leftover = launcher.cleanup()
    assert not leftover, f"rank processes outlived the test: {leftover}"
    new = set(live_children()) - before
    assert not new, f"child processes left behind: {sorted(new)}"


def finish(proc: subprocess.Popen, timeout: float = 30.0) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


MODEX_PROGRAM = """
    import os
    from ompy.orte.runtime import init

    rt = init()
    me = rt.identity
    rt.modex.put("who", {"rank": me.rank, "pid": os.getpid()})
    rt.modex.commit()
    rt.modex.fence()
    assert [rt.modex.get(r, "who")["rank"] for r in range(me.size)] == list(range(me.size))
    rt.modex.put("round", 10 * me.rank)
    rt.modex.commit()
    rt.modex.fence()
    assert [rt.modex.get(r, "round") for r in range(me.size)] == [10 * r for r in range(me.size)]
    try:
        rt.modex.get((me.rank + 1) % me.size, "never")
    except KeyError as error:
        print("missing:", error)
    rt.finalize()
"""


def test_sixteen_ranks_exchange_data_through_two_fences(launch):
    size = 16
    launch.serve(size)
    procs = [launch.start(MODEX_PROGRAM, rank, size) for rank in range(size)]
    for rank, proc in enumerate(procs):
        code, out, err = finish(proc, timeout=60)
        assert code == 0, err
        peer = (rank + 1) % size
        assert f"missing: rank {peer} has not committed the modex key 'never'" in out
    events = launch.events_until(lambda seen: len(seen) == 2 * size)
    assert {e.rank for e in events if isinstance(e, RankConnected)} == set(range(size))
    assert {e.rank for e in events if isinstance(e, RankFinalized)} == set(range(size))


LEAN_FENCE_PROGRAM = """
    import os
    from ompy.orte.control import ControlClient, identity_from_environment

    me = identity_from_environment(os.environ)
    client = ControlClient.connect(
        me.server, me.secret, me.jobid, me.rank, pid=os.getpid(), host=me.node_name, timeout=60
    )
    client.request("commit", data={"n": me.rank})
    client.request("fence", generation=0)
    total = sum(client.request("get", rank=r, key="n") for r in range(me.size))
    assert total == me.size * (me.size - 1) // 2, total
    client.request("finalize")
    client.close()
"""


@pytest.mark.slow
def test_sixty_four_ranks_fence_on_one_server_thread(launch):
    size = 64
    launch.serve(size)
    started = time.monotonic()
    procs = [launch.start(LEAN_FENCE_PROGRAM, rank, size) for rank in range(size)]
    for proc in procs:
        code, _out, err = finish(proc, timeout=90)
        assert code == 0, err
    assert time.monotonic() - started < 60
    events = launch.events_until(lambda seen: len(seen) == 2 * size)
    assert sum(isinstance(e, RankFinalized) for e in events) == size


BLOCKED_PROGRAM = """
    import sys
    from ompy.orte.runtime import init

    rt = init()

    def waiting_in_a_distinctive_function():
        print("ready", flush=True)  # from inside: a stack taken from now on shows this frame
        rt.modex.fence()  # rank 1 never comes

    waiting_in_a_distinctive_function()
"""


def test_stacks_show_where_a_rank_waits_and_it_exits_when_the_launcher_goes(launch):
    server = launch.serve(2)
    proc = launch.start(BLOCKED_PROGRAM, 0, 2)
    assert proc.stdout.readline() == "ready\n"
    stacks = server.request_stacks(timeout=10)
    assert list(stacks) == [0]
    assert "waiting_in_a_distinctive_function" in stacks[0]
    assert 'Thread "MainThread"' in stacks[0]
    server.close()
    code, _out, err = finish(proc, timeout=10)
    assert code == LOST_EXIT_CODE
    assert "rank 0 of job" in err and "lost the connection to the launcher" in err


SERVER_PROGRAM = """
    import json, secrets, sys, threading
    from ompy.orte.control import ControlServer

    secret = secrets.token_bytes(32)
    server = ControlServer("jkill", 2, secret, lambda event: None)
    server.start()
    print(json.dumps({"address": server.address, "secret": secret.hex()}), flush=True)
    threading.Event().wait()
"""


def test_a_rank_exits_within_seconds_when_its_launcher_is_killed(launch):
    launcher = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(SERVER_PROGRAM)],
        stdout=subprocess.PIPE,
        text=True,
    )
    launch.procs.append(launcher)
    contact = json.loads(launcher.stdout.readline())
    launch.jobid, launch.secret = "jkill", bytes.fromhex(contact["secret"])
    rank = launch.start(BLOCKED_PROGRAM, 0, 2, address=tuple(contact["address"]))
    assert rank.stdout.readline() == "ready\n"
    launcher.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    code, _out, err = finish(rank, timeout=10)
    assert time.monotonic() - killed < 5
    assert code == LOST_EXIT_CODE, err
    assert "lost the connection to the launcher" in err
    # The rank can see the sockets close before the killed launcher is a zombie: reap it here,
    # so that the fixture's check for survivors does not race the kernel.
    launcher.wait(timeout=10)


def test_a_rank_that_simply_returns_is_finalized_at_exit(launch):
    launch.serve(1)
    code, _out, err = finish(launch.start("import ompy.orte.runtime as r\nr.init()\n", 0, 1))
    assert code == 0, err
    events = launch.events_until(lambda seen: any(isinstance(e, RankFinalized) for e in seen))
    assert [type(e) for e in events] == [RankConnected, RankFinalized]


def test_an_uncaught_exception_is_reported_to_the_launcher_instead_of_printed(launch):
    launch.serve(1)
    program = """
        from ompy.orte.runtime import init

        init()

        def compute():
            return 1 / 0

        compute()
    """
    code, _out, err = finish(launch.start(program, 0, 1))
    assert code == 1
    assert "ZeroDivisionError" not in err  # the launcher prints it, once, tagged with the rank
    events = launch.events_until(lambda seen: any(isinstance(e, RankLost) for e in seen))
    reported = [e for e in events if isinstance(e, RankException)]
    assert len(reported) == 1 and "in compute" in reported[0].traceback
    assert not any(isinstance(e, RankFinalized) for e in events)


def test_abort_tells_the_launcher_and_exits_with_the_code(launch):
    launch.serve(2)
    program = """
        from ompy.orte.runtime import init

        init().abort(3, "bad input file")
    """
    code, _out, _err = finish(launch.start(program, 1, 2))
    assert code == 3
    events = launch.events_until(lambda seen: any(isinstance(e, RankAborted) for e in seen))
    assert events[-1] == RankAborted(1, 3, "bad input file")
    time.sleep(0.3)
    assert launch.events.empty()  # no RankLost after an abort


def test_a_rank_killed_by_a_signal_is_lost(launch):
    launch.serve(2)
    proc = launch.start(BLOCKED_PROGRAM, 0, 2)
    assert proc.stdout.readline() == "ready\n"
    proc.kill()
    finish(proc)
    events = launch.events_until(lambda seen: any(isinstance(e, RankLost) for e in seen))
    assert events[-1].rank == 0


def test_terminate_makes_the_rank_send_itself_sigterm(launch):
    server = launch.serve(2)
    proc = launch.start(BLOCKED_PROGRAM, 0, 2)
    assert proc.stdout.readline() == "ready\n"
    server.terminate("rank 1 failed")
    code, _out, err = finish(proc, timeout=10)
    assert code == -signal.SIGTERM
    assert "terminated by the launcher: rank 1 failed" in err


def test_the_demo_prints_one_row_per_rank(launch):
    size = 3
    launch.serve(size)
    program = "from ompy.orte.demo import main\nmain()\n"
    procs = [launch.start(program, rank, size) for rank in range(size)]
    outputs = [finish(proc) for proc in procs]
    assert all(code == 0 for code, _, _ in outputs), outputs
    table = outputs[0][1]
    assert f"job {launch.jobid}: 3 rank(s), launched" in table
    rows = table.strip().splitlines()[3:]
    assert [row.split()[0] for row in rows] == ["0", "1", "2"]
    assert [str(proc.pid) for proc in procs] == [row.split()[-1] for row in rows]
    assert outputs[1][1] == outputs[2][1] == ""
