"""The fault-injection matrix: {sm, tcp} x five faults x {receive, collective} x {rank 1 busy,
rank 1 waiting}, 4 ranks each: forty cases.

One ``ompy run`` per case (``programs/victim.py``): rank 1 meets the fault, either while the
other ranks wait for it in the receive or collective, or while it is itself blocked in it,
and prints when.  A case passes when ``ompy run`` ends within
:data:`PROMPT` seconds of the fault (of the SIGCONT, for SIGSTOP, whose job must complete),
with the expected exit code and report, and leaves no process, session directory or shared
memory behind.  Cases run two at a time (:data:`POOL`): 40 jobs of four ranks on a 2-core
machine.

``python -m integration.faults.matrix`` (from the repository root) runs the matrix and prints
the table that ``docs/fault-tolerance.md`` shows.
"""

from __future__ import annotations

import concurrent.futures
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import attrs

from ..conftest import SETTLE_SECONDS, Launcher, marked_pids

VICTIM = str(Path(__file__).parent / "programs" / "victim.py")
TRANSPORTS = {"sm": [], "tcp": ["--mca", "btl", "self,tcp"]}
WHERE = {"recv": "a receive", "coll": "a collective"}
STATES = {"busy": "the others wait for rank 1 in", "waiting": "rank 1 waits in"}
#: How long after the fault the job must have ended (loose enough for a loaded 2-core machine).
PROMPT = 5.0
#: Seconds rank 1 stays stopped in the SIGSTOP case.
STOPPED = 5.0
#: Cases at a time.
POOL = 2
#: A case that takes longer has hung.
TIMEOUT = 60.0


@attrs.frozen
class Fault:
    name: str
    exit_code: int
    #: A regular expression for the launcher's report (None: the job completes, no report).
    says: str | None


_RANK1 = r"rank 1 of 4 \(pid \{pid\}, on \{host\}\) "
FAULTS = (
    Fault("sigkill", 137, _RANK1 + r"was killed by signal 9 \(SIGKILL\)"),
    Fault("sigstop", 0, None),
    # The ranks that had not finished: all three, or fewer when rank 1 had contributed to
    # the allreduce before its fault and a peer could complete it and reach Finalize.
    Fault(
        "sys.exit3",
        3,
        _RANK1 + r"called sys\.exit\(3\) while ranks? [0-3, ]+ had not finished, without "
        r"finalizing",
    ),
    Fault("os._exit0", 1, _RANK1 + r"exited with code 0 without finalizing"),
    Fault("exception", 1, _RANK1 + r"raised an uncaught exception"),
)


@attrs.frozen
class Case:
    transport: str
    fault: Fault
    where: str
    state: str

    @property
    def id(self) -> str:
        return f"{self.transport}-{self.fault.name}-{self.where}-{self.state}"


CASES = tuple(
    Case(transport, fault, where, state)
    for transport in TRANSPORTS
    for fault in FAULTS
    for where in WHERE
    for state in STATES
)


@attrs.define
class Outcome:
    case: Case
    returncode: int
    stdout: str
    stderr: str
    #: Seconds from the fault (from the SIGCONT for SIGSTOP) to the launcher's exit.
    after_fault: float | None
    #: What the job left: processes, session directories, shared memory.
    leftovers: list[str]

    @property
    def report(self) -> str:
        """The launcher's report line, with the pid and host made generic."""
        lines = [line for line in self.stderr.splitlines() if line.startswith("ompy run:")]
        if not lines:
            return ""
        text = re.sub(r"\(pid \d+, on [^)]+\)", "(pid {pid}, on {host})", lines[0])
        return text[len("ompy run: ") :]

    def problems(self) -> list[str]:
        """Everything that is not as the case expects (empty: it passed)."""
        fault = self.case.fault
        found = []
        if self.returncode != fault.exit_code:
            found.append(f"exit code {self.returncode}, expected {fault.exit_code}")
        if fault.says is None:
            if self.stdout.count(" done") != 4:
                found.append(f"not every rank finished: {self.stdout!r}")
            if self.report:
                found.append(f"unexpected report {self.report!r}")
        elif not re.search(fault.says, self.report):
            found.append(f"report {self.report!r} does not say {fault.says!r}")
        if fault.name == "exception" and "[rank 1] RuntimeError: deliberate fault" not in (
            self.stderr
        ):
            found.append("the traceback is missing from the report")
        if self.after_fault is None:
            found.append("rank 1 never reported its fault")
        elif self.after_fault > PROMPT:
            found.append(f"ended {self.after_fault:.2f} s after the fault (limit {PROMPT:g} s)")
        found.extend(self.leftovers)
        return found


def run_case(case: Case, tmpdir: Path) -> Outcome:
    """Run one case in ``tmpdir`` (its TMPDIR); check what it left once it is over."""
    launcher = Launcher(uuid.uuid4().hex, tmpdir)
    program = [VICTIM, case.fault.name, case.where, case.state]
    args = ["-n", "4", "-q", *TRANSPORTS[case.transport], *program]
    process = launcher.start(args)
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        err += f"\n(killed after {TIMEOUT:g} s)"
    ended = time.time()
    match = re.search(r"fault at (\d+\.\d+)", out)
    after = None
    if match:
        after = ended - float(match.group(1))
        if case.fault.name == "sigstop":
            after -= STOPPED
    return Outcome(case, process.returncode, out, err, after, _leftovers(launcher))


def _leftovers(launcher: Launcher) -> list[str]:
    deadline = time.monotonic() + SETTLE_SECONDS
    while marked_pids(launcher.marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    found = [f"process {pid} survived the job" for pid in marked_pids(launcher.marker)]
    found += [f"left {p.name}" for p in launcher.tmpdir.iterdir() if p.name.startswith("ompy-")]
    found += [f"left /dev/shm/{p.name}" for p in launcher.job_shm_files()]
    return found


def run_all(base: Path, cases: tuple[Case, ...] = CASES) -> dict[str, Outcome]:
    """Every case, :data:`POOL` at a time, each in its own directory under ``base``."""

    def one(case: Case) -> Outcome:
        tmpdir = base / case.id
        tmpdir.mkdir()
        return run_case(case, tmpdir)

    with concurrent.futures.ThreadPoolExecutor(POOL) as pool:
        outcomes = list(pool.map(one, cases))
    return {outcome.case.id: outcome for outcome in outcomes}


def markdown(outcomes: dict[str, Outcome]) -> str:
    """The results as the table of ``docs/fault-tolerance.md``."""
    rows = [
        "| btl | fault in rank 1 | when | exit code | s after fault | report |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for outcome in outcomes.values():
        case = outcome.case
        after = "-" if outcome.after_fault is None else f"{outcome.after_fault:.2f}"
        completes = case.fault.says is None
        report = outcome.report or (
            "(the job completes: every rank prints done)" if completes else "(no report)"
        )
        status = "" if not outcome.problems() else " **FAILED: " + "; ".join(outcome.problems())
        rows.append(
            f"| {case.transport} | {case.fault.name} | {STATES[case.state]} {WHERE[case.where]} | "
            f"{outcome.returncode} | {after} | {report}{status} |"
        )
    return "\n".join(rows)


def main() -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ompy-faults-") as base:
        outcomes = run_all(Path(base))
    print(markdown(outcomes))
    print(f"\n{len(outcomes)} cases in {time.monotonic() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
