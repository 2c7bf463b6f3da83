"""``srun --mpi=pmi2 python app.py``: ranks started by Slurm itself, through ess pmi.

Every job runs in the private Slurm cluster of the fixtures (three nodes ``n1..n3``: three
slurmd on this machine); the ``ompy`` fixture's marker proves afterwards that no rank
survived its job, that no session directory was left in the test's temporary directory, and
the test checks that no shared-memory file of a PMI job is left in ``/dev/shm``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HERE = Path(__file__).parent
PROGRAMS = HERE / "programs"
INTEGRATION = HERE.parents[1]
P2P_SUITE = INTEGRATION / "p2p" / "programs" / "p2p_suite.py"
COLL_SUITE = INTEGRATION / "coll" / "programs" / "coll_suite.py"
VERBOSE_ESS = {"OMPY_MCA_ess_base_verbose": "10"}
#: Every section of the p2p suite (integration/p2p/test_p2p.py).
P2P_SECTIONS = {
    "sizes",
    "wildcards",
    "modes",
    "completions",
    "objects",
    "probes",
    "truncation",
    "proc_null",
    "cancel",
    "errors",
    "comms",
    "schedules",
}
SCHEDULES = [
    [[0, 1, 0, 100], [1, 0, 2, 70_000], [2, 3, 1, 4090], [3, 2, 0, 0]],
    [[0, 3, 1, 300_000], [3, 0, 1, 1], [1, 2, 3, 100], [2, 1, 3, 100], [1, 2, 3, 7]],
]


def reports(stdout: str) -> dict[int, dict]:
    found = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            found[report["rank"]] = report
    return found


def task_outputs(folder: Path) -> str:
    """The stdout of every task written by ``srun --output=<folder>/task%t.out``, joined.

    srun's own forwarding may cut a long line of one task with another task's output.
    """
    return "".join(path.read_text() for path in sorted(folder.glob("task*.out")))


def pmi_shm_files() -> list[str]:
    return sorted(p.name for p in Path("/dev/shm").glob("ompy-pmi*"))


@pytest.fixture
def jobs(slurm_three, slurm_jobs):
    before = pmi_shm_files()
    yield slurm_jobs(slurm_three)
    assert pmi_shm_files() == before, "shared-memory files of PMI jobs were left behind"


def srun(*args: str) -> list[str]:
    return ["srun", "--mpi=pmi2", *args]


@pytest.mark.parametrize(
    ("layout", "version"),
    [
        (("-N3", "--ntasks-per-node=2"), "2"),
        (("-N2", "-n5", "--distribution=cyclic"), "2"),
        (("-N2", "-n3"), "1"),
    ],
    ids=["block-pmi2", "cyclic-pmi2", "block-pmi1"],
)
def test_ranks_learn_their_place_from_slurm_and_talk(jobs, layout, version):
    env = {**VERBOSE_ESS, "OMPY_MCA_ess_pmi_version": version}
    result = jobs.run(srun(*layout, sys.executable, str(PROGRAMS / "where.py")), env=env)
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    size = len(found)
    assert sorted(found) == list(range(size)) and size in {3, 5, 6}, result.stdout
    per_node: dict[str, list[int]] = {}
    for rank, report in found.items():
        assert report["direct"] and report["size"] == size
        assert report["left"] == (rank - 1) % size
        assert report["total"] == size * (size - 1) // 2
        assert report["node"] == report["slurm_node"], report  # Slurm's node, not the host
        per_node.setdefault(report["node"], []).append(report["local_rank"])
    assert all(sorted(locals_) == list(range(len(locals_))) for locals_ in per_node.values())
    assert result.stderr.count(f"pmi: PMI-{version}: rank") == size, result.stderr


@pytest.mark.parametrize(
    ("nodes", "per_node", "btl"),
    [(2, 2, "self,sm,tcp"), (3, 1, "self,tcp"), (1, 3, "self,sm")],
    ids=["2x2-default", "3x1-tcp", "1x3-sm"],
)
def test_the_point_to_point_suite_runs_under_srun(jobs, nodes, per_node, btl, tmp_path):
    schedules = tmp_path / "schedules.json"
    schedules.write_text(json.dumps(SCHEDULES))
    program = [sys.executable, str(P2P_SUITE), str(schedules), str(1 << 20)]
    layout = (f"-N{nodes}", f"--ntasks-per-node={per_node}")
    env = {"OMPY_MCA_btl": btl, "P2P_SUITE_NODE_SIZE": str(per_node)}
    output = f"--output={tmp_path}/task%t.out"
    result = jobs.run(srun(*layout, output, *program), env=env, timeout=240)
    assert result.returncode == 0, result.stderr + task_outputs(tmp_path)
    found = reports(task_outputs(tmp_path))
    assert sorted(found) == list(range(nodes * per_node)), result.stdout
    for report in found.values():
        sections = {name.split(":")[0] for name in report["checks"]}
        assert sections == P2P_SECTIONS, f"rank {report['rank']} ran only {sorted(sections)}"


def test_the_collective_suite_runs_under_srun(jobs, tmp_path):
    output = f"--output={tmp_path}/task%t.out"
    result = jobs.run(srun("-N3", "-n5", output, sys.executable, str(COLL_SUITE)), timeout=240)
    assert result.returncode == 0, result.stderr + task_outputs(tmp_path)
    found = reports(task_outputs(tmp_path))
    assert sorted(found) == list(range(5)), task_outputs(tmp_path) + result.stderr
    assert all(report["size"] == 5 for report in found.values())


@pytest.mark.parametrize(
    ("how", "status", "said"),
    [
        ("abort", 7, "ends the job with code 7: Comm.Abort(7)"),
        ("raise", 1, "RuntimeError: rank 1 gives up"),
        ("exit", 5, "called sys.exit(5) before MPI Finalize"),
    ],
)
def test_a_rank_leaving_early_ends_the_step_through_pmi(jobs, how, status, said):
    program = [sys.executable, str(PROGRAMS / "leave_early.py"), how]
    result = jobs.run(srun("-N2", "-n3", *program), timeout=90)
    assert result.returncode != 0
    assert sorted(result.stdout.split("\n")[:-1]) == [f"rank {r} up" for r in range(3)]
    assert f"task 1: Exited with exit code {status}" in result.stderr, result.stderr
    assert said in result.stderr, result.stderr


def test_a_rank_killed_by_a_signal_ends_the_step_under_kill_on_bad_exit(jobs):
    """A killed rank cannot tell PMI; srun -K (as the docs advise) ends the step then."""
    program = [sys.executable, str(PROGRAMS / "leave_early.py"), "kill"]
    result = jobs.run(srun("-N2", "-n3", "--kill-on-bad-exit=1", *program), timeout=90)
    assert result.returncode != 0
    assert "task 1: Killed" in result.stderr, result.stderr
