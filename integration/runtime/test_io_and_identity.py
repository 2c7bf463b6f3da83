"""What a rank sees (identity, environment, stdin) and how its output comes out of ompy run."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
IDENTITY = str(PROGRAMS / "identity.py")

pytestmark = pytest.mark.timeout(120)


def test_identity_environment_stdin_tags_and_propagation(ompy, tmp_path, monkeypatch):
    """One 3-rank job checks identity, -x, --mca, --wdir, stdin routing and --tag-output."""
    wdir = tmp_path / "work"
    wdir.mkdir()
    result = ompy.run(
        [
            "-n",
            "3",
            "--oversubscribe",
            "--tag-output",
            "-x",
            "EXPORTED_VALUE=forty two",
            "-x",
            "EXPORTED_FROM_ENV",
            "--mca",
            "orte_abort_timeout",
            "1.5",
            "--wdir",
            str(wdir),
            IDENTITY,
        ],
        input="line for rank zero\n",
        env={"EXPORTED_FROM_ENV": "inherited"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("warning") == 0  # --oversubscribe silences the warning

    reports = {}
    tag = re.compile(r"^\[(\w+),(\d)\]<stdout>:(.*)$")
    jobids = set()
    for line in result.stdout.splitlines():
        match = tag.match(line)
        assert match, f"untagged stdout line: {line!r}"
        jobid, rank, text = match.groups()
        jobids.add(jobid)
        if text.startswith("{"):
            reports[int(rank)] = json.loads(text)
        else:
            assert text == f"partial from {rank}"  # the unterminated last line, flushed at EOF
    assert sorted(reports) == [0, 1, 2]
    (jobid,) = jobids

    for rank, env in reports.items():
        assert env["OMPY_RANK"] == str(rank)
        assert env["OMPY_SIZE"] == "3"
        assert env["OMPY_LOCAL_RANK"] == str(rank)
        assert env["OMPY_LOCAL_SIZE"] == "3"
        assert env["OMPY_NODE_ID"] == "0"
        assert env["OMPY_JOBID"] == jobid
        assert env["OMPY_OVERSUBSCRIBED"] == "1"  # 3 ranks on this 2-core machine
        assert env["session_dir_exists"] is True
        assert env["cwd"] == str(wdir)
        assert env["EXPORTED_VALUE"] == "forty two"
        assert env["EXPORTED_FROM_ENV"] == "inherited"
        assert env["OMPY_MCA_orte_abort_timeout"] == "1.5"
        assert env["abort_timeout"] == [1.5, "command line (--mca orte_abort_timeout)"]
        assert env["stdin"] == ("line for rank zero\n" if rank == 0 else "")
    assert len({env["OMPY_SECRET"] for env in reports.values()}) == 1
    assert len({env["OMPY_SESSION_DIR"] for env in reports.values()}) == 1

    stderr_lines = [line for line in result.stderr.splitlines() if "<stderr>" in line]
    assert sorted(stderr_lines) == [f"[{jobid},{r}]<stderr>:to stderr from {r}" for r in range(3)]


def test_timestamps_and_output_files(ompy, tmp_path):
    """--output-filename writes DIR/1/rank.N/{stdout,stderr}; --timestamp-output stamps lines."""
    out = tmp_path / "out"
    result = ompy.run(
        ["-n", "2", "--timestamp-output", "--output-filename", str(out), "python", IDENTITY]
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    stamp = r"\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\] "
    for rank in range(2):
        stdout = (out / "1" / f"rank.{rank}" / "stdout").read_text().splitlines()
        stderr = (out / "1" / f"rank.{rank}" / "stderr").read_text().splitlines()
        assert len(stdout) == 2
        assert re.fullmatch(stamp + r"\{.*\}", stdout[0])
        assert re.fullmatch(stamp + f"partial from {rank}", stdout[1])
        assert re.fullmatch(stamp + f"to stderr from {rank}", stderr[0])


def test_plain_output_is_passed_through_unchanged(ompy):
    result = ompy.run(["-n", "2", "sh", "-c", "printf 'a\\nb' ; printf 'x\\n' >&2"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("a\n") == 2
    assert result.stdout.count("b") == 2
    assert result.stderr.count("x\n") == 2


def test_the_demo_runs_on_four_ranks(ompy):
    result = ompy.run(["-n", "4", "--oversubscribe", "python", "-m", "ompy.orte.demo"])
    assert result.returncode == 0, result.stderr
    assert "4 rank(s), launched" in result.stdout
    table = result.stdout.splitlines()[3:]
    assert [line.split()[0] for line in table] == ["0", "1", "2", "3"]


def test_ps_tells_the_ranks_and_the_fork_server_apart(ompy):
    """Forked ranks would otherwise all show the launcher's command line."""
    titles = str(PROGRAMS / "titles.py")
    result = ompy.run(["-n", "2", sys.executable, titles, "an argument"])
    assert result.returncode == 0, result.stderr
    reports = sorted((json.loads(line) for line in result.stdout.splitlines()), key=str)
    assert len(reports) == 2
    command = shlex.join([sys.executable, titles, "an argument"])
    for report in reports:
        rank = report["rank"]
        assert report["before_mpi"]["args"] == f"ompy rank {rank}: {command}"
        assert re.fullmatch(rf"ompy rank {rank}/2 of job \w+: {re.escape(command)}",
                            report["after_mpi"]["args"])  # fmt: skip
        assert report["after_mpi"]["comm"] == f"ompy-rank{rank}"
        assert report["parent"]["comm"] == "ompy-forksrv"
        assert report["parent"]["args"].startswith("ompy fork server of ompy run ")
