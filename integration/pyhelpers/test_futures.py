"""``ompy.futures`` across ranks, over shared memory and TCP.

- ``programs/futures_comm.py``: ``MPICommExecutor`` (10,000 small calls, large numpy results,
  lambdas, remote tracebacks, calls failing alone inside batches, initializers, a broken
  executor, a sub-communicator);
- ``programs/futures_shared.py`` under ``python -m ompy.futures``: the job's other ranks serve
  every executor of the program, without spawning;
- a program that fails under ``python -m ompy.futures`` ends the whole job with its traceback
  (the serving ranks do not wait for it);
- ``programs/futures_spawn.py``: ``MPIPoolExecutor`` spawning its workers from a one-rank job
  (10,000 small calls, 4 x 32 MiB results, lambdas, a task's exception, shutdown, no orphans);
  a program that never shuts its executor down still ends with its workers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(600)

COMM_CHECKS = [
    "map10k",
    "map10k_unordered",
    "map10k_chunks",
    "arrays",
    "lambda",
    "local_function",
    "error",
    "batch_failures",
    "workers",
    "num_workers",
    "initializer",
    "pkl5",
    "broken",
    "subcomm",
]
SHARED_CHECKS = ["argv", "map", "two_executors", "workers", "lambda", "arrays"]
SPAWN_CHECKS = [
    "workers",
    "map10k",
    "map10k_unordered",
    "map10k_chunks",
    "arrays",
    "lambda",
    "local_function",
    "error",
    "main_class",
    "run_name",
    "bad_unpickle",
    "shutdown",
    "cancel_wait",
    "max_workers_environ",
    "use_pkl5_environ",
    "no_orphans",
]


def checks(stdout: str) -> dict[str, bool]:
    entries = [json.loads(line) for line in stdout.splitlines()]
    return {entry["check"]: entry["ok"] for entry in entries}


@pytest.mark.parametrize(
    ("size", "btl"), [(1, "self,sm"), (2, "self,sm"), (4, "self,sm"), (3, "self,tcp")]
)
def test_comm_executor(ompy, size, btl):
    args = ["-n", str(size), "--oversubscribe", "--mca", "btl", btl, "--timeout", "400"]
    result = ompy.run([*args, sys.executable, str(PROGRAMS / "futures_comm.py")], timeout=450)
    assert result.returncode == 0, result.stderr
    assert checks(result.stdout) == dict.fromkeys(COMM_CHECKS, True), result.stdout


@pytest.mark.parametrize(("size", "btl"), [(1, "self,sm"), (3, "self,sm"), (4, "self,tcp")])
def test_shared_workers_without_spawn(ompy, size, btl):
    args = ["-n", str(size), "--oversubscribe", "--mca", "btl", btl, "--timeout", "300"]
    program = [sys.executable, "-m", "ompy.futures", str(PROGRAMS / "futures_shared.py"), "hello"]
    result = ompy.run([*args, *program], timeout=350)
    assert result.returncode == 0, result.stderr
    assert checks(result.stdout) == dict.fromkeys(SHARED_CHECKS, True), result.stdout


def test_failing_program_ends_the_job(ompy, tmp_path):
    program = tmp_path / "fails.py"
    program.write_text(
        "from ompy.futures import MPIPoolExecutor\n"
        "if __name__ == '__main__':\n"
        "    with MPIPoolExecutor() as executor:\n"
        "        assert executor.submit(abs, -2).result() == 2\n"
        "        raise LookupError('the program failed')\n"
    )
    args = ["-n", "3", "--oversubscribe", "--timeout", "200"]
    result = ompy.run([*args, sys.executable, "-m", "ompy.futures", str(program)], timeout=250)
    assert result.returncode == 1, result.stderr
    assert "LookupError: the program failed" in result.stderr


def test_program_without_main_guard_is_told_why(ompy, tmp_path):
    """The workers import the program to find its functions; unguarded, it would make executors
    there too: the executor breaks with the reason instead of the job hanging."""
    program = tmp_path / "unguarded.py"
    program.write_text(
        "from ompy.futures import MPIPoolExecutor\n"
        "with MPIPoolExecutor() as executor:\n"
        "    executor.submit(abs, -2).result()\n"
    )
    args = ["-n", "3", "--oversubscribe", "--timeout", "200"]
    result = ompy.run([*args, sys.executable, "-m", "ompy.futures", str(program)], timeout=250)
    assert result.returncode == 1, result.stderr
    assert "BrokenExecutor" in result.stderr
    assert "if __name__ == '__main__':" in result.stderr


def test_bad_command_line_is_refused_on_every_rank(ompy):
    args = ["-n", "2", "--timeout", "100"]
    result = ompy.run(
        [*args, sys.executable, "-m", "ompy.futures", "/no/such/file.py"], timeout=150
    )
    assert result.returncode == 1
    assert "path does not exist: /no/such/file.py" in result.stderr


#: Processes of different jobs (the program and its spawned workers) always talk over tcp; the
#: workers among themselves use sm in the first selection.
@pytest.mark.parametrize("btl", ["self,sm,tcp", "self,tcp"])
def test_pool_executor_with_spawned_workers(ompy, btl):
    args = ["-n", "1", "--host", "localhost:5", "--mca", "btl", btl, "--timeout", "400"]
    result = ompy.run([*args, sys.executable, str(PROGRAMS / "futures_spawn.py")], timeout=450)
    assert result.returncode == 0, result.stderr
    assert checks(result.stdout) == dict.fromkeys(SPAWN_CHECKS, True), result.stdout


def test_executor_left_open_ends_with_the_program(ompy, tmp_path):
    """A program that never shuts its executor down: the workers are told to leave when it
    exits, the job ends, and (the fixture checks) no worker process is left behind."""
    program = tmp_path / "open.py"
    program.write_text(
        "import os\n"
        "from ompy.futures import MPIPoolExecutor\n"
        "if __name__ == '__main__':\n"
        "    executor = MPIPoolExecutor(max_workers=2)\n"
        "    pids = set(executor.map(lambda _: os.getpid(), range(20)))\n"
        "    print(len(pids) >= 1 and os.getpid() not in pids, flush=True)\n"
    )
    args = ["-n", "1", "--host", "localhost:3", "--timeout", "200"]
    result = ompy.run([*args, sys.executable, str(program)], timeout=250)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "True"


@pytest.mark.parametrize("btl", ["self,sm", "self,tcp"])
def test_comm_executor_left_without_a_call_releases_the_workers(ompy, tmp_path, btl):
    """The root leaves an ``MPICommExecutor`` block without a call (once per root): the other
    ranks, serving inside ``__enter__``, are told to stop and every rank goes on."""
    program = tmp_path / "unused.py"
    program.write_text(
        "from ompy import MPI\n"
        "from ompy.futures import MPICommExecutor\n"
        "comm = MPI.COMM_WORLD\n"
        "for root in range(comm.Get_size()):\n"
        "    with MPICommExecutor(comm, root) as executor:\n"
        "        assert (executor is not None) == (comm.Get_rank() == root)\n"
        "comm.Barrier()\n"
        "print('through', flush=True)\n"
    )
    args = ["-n", "3", "--oversubscribe", "--mca", "btl", btl, "--timeout", "100"]
    result = ompy.run([*args, sys.executable, str(program)], timeout=150)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["through"] * 3
