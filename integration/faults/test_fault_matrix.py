"""Fault injection (issue 12): every fault in one rank ends a 4-rank job promptly and cleanly.

The cases and what each expects are in :mod:`.matrix`; all forty run once per session, two at
a time, and each test checks one case: the exit code, the report, the time from the fault
to the launcher's exit (at most :data:`.matrix.PROMPT` seconds; SIGSTOP for 5 s must let the
job complete), and that no process, session directory or shared memory is left.
"""

from __future__ import annotations

import pytest

from .matrix import CASES, Outcome, run_all


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, Outcome]:
    return run_all(tmp_path_factory.mktemp("faults"))


@pytest.mark.timeout(900)
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_fault_ends_the_job_promptly_with_its_code_and_report(outcomes, case):
    outcome = outcomes[case.id]
    assert not outcome.problems(), (
        f"{case.id}: {outcome.problems()}\nstdout:\n{outcome.stdout}\nstderr:\n{outcome.stderr}"
    )
