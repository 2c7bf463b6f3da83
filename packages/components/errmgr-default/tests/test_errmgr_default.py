"""The default error policy, decision by decision: which rank events end the job, and with
which exit code and words ``ompy run`` reports them.

The module judges each event on its own; the launcher keeps the first failure it is given and
terminates the other ranks, so the first failing rank is the one the job fails with.
"""

from __future__ import annotations

import signal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.mca.errmgr.default import DefaultErrmgrComponent
from ompy.mca.errmgr.default.policy import DefaultErrmgrModule
from ompy.opal.mca.params import Registry
from ompy.orte.mca.errmgr import Failure, RankAborted, RankExited, RankLeft, RankRaised
from ompy.orte.mca.errmgr.base import select_errmgr

TRACEBACK = 'Traceback (most recent call last):\n  File "app.py", line 3\nKeyError: 1\n'


@pytest.fixture
def policy() -> DefaultErrmgrModule:
    return DefaultErrmgrModule()


def test_the_component_offers_the_policy():
    component = DefaultErrmgrComponent(Registry(environ={}, files=[]))
    component.register_params()
    component.open()
    offer = component.query(None)
    assert offer is not None and offer.priority == 10
    assert isinstance(offer.module, DefaultErrmgrModule)


def test_the_errmgr_framework_selects_it_by_name():
    opened, module = select_errmgr(Registry(environ={"OMPY_MCA_errmgr": "default"}, files=[]))
    try:
        assert isinstance(module, DefaultErrmgrModule)
    finally:
        opened.close()


# -- exits --------------------------------------------------------------------------------------


@pytest.mark.parametrize("connected", [False, True])
def test_exiting_with_0_after_finalizing_is_a_normal_end(policy, connected):
    assert policy.judge(RankExited(2, 0, finalized=True, connected=connected)) is None


def test_a_program_that_never_connected_may_exit_with_0(policy):
    """Not an ompy program (``ompy run hostname``): it has nothing to finalize."""
    assert policy.judge(RankExited(2, 0)) is None


def test_exiting_with_0_without_finalizing_fails_the_job_with_1(policy):
    """Open MPI's rule: a rank that initialized must finalize; os._exit(0) does not."""
    failure = policy.judge(RankExited(2, 0, connected=True))
    assert failure is not None and failure.rank == 2 and failure.exit_code == 1
    assert failure.reason.startswith("exited with code 0 without finalizing: ")
    noted = policy.judge(RankExited(2, 0, connected=True, note="Finalize at exit raised"))
    assert noted is not None
    assert noted.reason.startswith("exited with code 0 without finalizing (Finalize at exit")


@pytest.mark.parametrize("code", [0, 3, 255])
def test_leaving_early_ends_the_job_with_the_code_it_asked_for(policy, code):
    failure = policy.judge(RankLeft(1, code, f"called sys.exit({code})", (0, 2)))
    assert failure == Failure(
        1,
        code,
        f"called sys.exit({code}) while ranks 0, 2 had not finished, without finalizing: "
        "the job ends with its exit code",
    )


def test_leaving_with_a_code_that_is_no_exit_status_gives_1(policy):
    assert policy.judge(RankLeft(1, 256, "called sys.exit(256)", (0,))).exit_code == 1


def test_leaving_because_finalization_failed_gives_1(policy):
    failure = policy.judge(RankLeft(3, None, "exited without finalizing (boom)", (1,)))
    assert failure == Failure(
        3, 1, "exited without finalizing (boom) while rank 1 had not finished"
    )


@pytest.mark.parametrize("code", [1, 2, 3, 127, 255])
def test_a_non_zero_exit_fails_the_job_with_that_code(policy, code):
    assert policy.judge(RankExited(2, code)) == Failure(2, code, f"exited with code {code}")


@pytest.mark.parametrize(
    "signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV, signal.SIGABRT, signal.SIGINT]
)
def test_death_by_a_signal_fails_the_job_with_128_plus_the_signal_number(policy, signum):
    failure = policy.judge(RankExited(0, -signum))
    assert failure == Failure(
        0, 128 + signum, f"was killed by signal {int(signum)} ({signum.name})"
    )


def test_a_signal_number_without_a_name_is_still_reported(policy):
    failure = policy.judge(RankExited(1, -100))
    assert failure == Failure(1, 228, "was killed by signal 100 (unknown signal)")


def test_failing_after_finalize_still_fails_the_job_and_says_so(policy):
    """Finalize is a promise to end cleanly: a crash at exit afterwards is still a failure."""
    assert policy.judge(RankExited(3, 4, finalized=True)) == Failure(
        3, 4, "exited with code 4 after finalizing"
    )
    assert policy.judge(RankExited(3, -signal.SIGKILL, finalized=True)) == Failure(
        3, 137, "was killed by signal 9 (SIGKILL) after finalizing"
    )


@given(returncode=st.integers(-64, 255), finalized=st.booleans(), rank=st.integers(0, 10_000))
def test_every_exit_status_maps_to_the_shells_code(returncode, finalized, rank):
    failure = DefaultErrmgrModule().judge(RankExited(rank, returncode, finalized, connected=True))
    if returncode == 0:
        assert (failure is None) == finalized
        return
    assert failure is not None and failure.rank == rank and failure.detail == ""
    assert failure.exit_code == (returncode if returncode > 0 else 128 - returncode)
    assert 1 <= failure.exit_code <= 255
    assert failure.reason.endswith(" after finalizing") == finalized


# -- abort --------------------------------------------------------------------------------------


def test_abort_ends_the_job_with_its_error_code_and_message(policy):
    failure = policy.judge(RankAborted(1, 7, "Comm.Abort(7) called on COMM_WORLD by rank 1"))
    assert failure == Failure(
        1, 7, "called abort with error code 7: Comm.Abort(7) called on COMM_WORLD by rank 1"
    )


def test_abort_without_a_message(policy):
    assert policy.judge(RankAborted(0, 3)) == Failure(0, 3, "called abort with error code 3")


def test_abort_with_error_code_0_still_ends_the_job(policy):
    """As in Open MPI: the job is over and the other ranks are terminated; the code is 0."""
    assert policy.judge(RankAborted(2, 0)) == Failure(2, 0, "called abort with error code 0")


@pytest.mark.parametrize("code", [256, 1000, -1, -300])
def test_an_abort_code_that_is_no_exit_status_makes_ompy_run_exit_with_1(policy, code):
    """An exit status holds 0..255: 256 would read as success.  The aborting rank itself exits
    with 1 for such codes; ompy run does the same, and the report names the code given."""
    assert policy.judge(RankAborted(0, code, "m")) == Failure(
        0, 1, f"called abort with error code {code}: m"
    )


# -- uncaught exceptions ------------------------------------------------------------------------


def test_an_uncaught_exception_fails_the_job_with_1_and_its_traceback(policy):
    assert policy.judge(RankRaised(5, TRACEBACK)) == Failure(
        5, 1, "raised an uncaught exception", TRACEBACK
    )


# -- sequences ----------------------------------------------------------------------------------


def test_an_event_the_policy_does_not_know_is_an_error(policy):
    with pytest.raises(TypeError, match="cannot judge 'exited'"):
        policy.judge("exited")


events = st.one_of(
    st.builds(RankExited, st.integers(0, 7), st.integers(-15, 3), st.booleans()),
    st.builds(RankAborted, st.integers(0, 7), st.integers(-2, 300), st.text(max_size=5)),
    st.builds(RankRaised, st.integers(0, 7), st.text(max_size=20)),
)


@given(st.lists(events, max_size=12))
def test_judgements_do_not_depend_on_what_was_judged_before(history):
    """So the first failing event of a job is the one the launcher ends the job with."""
    policy = DefaultErrmgrModule()
    judged = [policy.judge(event) for event in history]
    assert judged == [DefaultErrmgrModule().judge(event) for event in history]
    for event, failure in zip(history, judged, strict=True):
        clean_exit = isinstance(event, RankExited) and event.returncode == 0
        assert (failure is None) == clean_exit
        assert failure is None or failure.rank == event.rank
