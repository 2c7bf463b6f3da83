"""``ompy.rc``: mpi4py 4.1's run-time configuration, honoured by ``from ompy import MPI``."""

import os
import subprocess
import sys
import textwrap

import pytest

import ompy.rc
from ompy.ompi.api import rcoptions
from ompy.ompi.constants import THREAD_FUNNELED, THREAD_MULTIPLE, THREAD_SINGLE

DEFAULTS = {
    "initialize": True,
    "threads": True,
    "thread_level": "multiple",
    "finalize": None,
    "fast_reduce": True,
    "recv_mprobe": True,
    "irecv_bufsz": 32768,
    "errors": "exception",
}


@pytest.fixture
def rc():
    """``ompy.rc`` at its defaults, with its options put back afterwards (it is process-wide)."""
    saved = {name: getattr(ompy.rc, name) for name in ompy.rc.OPTIONS}
    ompy.rc(**DEFAULTS)  # other test modules switch initialize off when imported
    yield ompy.rc
    ompy.rc(**saved)


def test_the_options_are_mpi4pys_with_its_defaults():
    assert tuple(DEFAULTS) == ompy.rc.OPTIONS
    fresh = subprocess.run(
        [
            sys.executable,
            "-c",
            "import ompy.rc as rc; print({n: getattr(rc, n) for n in rc.OPTIONS})",
        ],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert fresh.stdout.strip() == repr(DEFAULTS)


def test_the_old_module_name_is_the_same_object():
    from ompy import rc as by_from
    from ompy.ompi.api import rc as old

    assert old is ompy.rc is by_from
    assert repr(ompy.rc) == "<ompy.rc>"


def test_options_are_set_one_by_one_or_by_calling_rc(rc):
    rc.initialize = False
    assert rc.initialize is False
    rc(threads=False, thread_level="serialized", irecv_bufsz=1024)
    assert (rc.threads, rc.thread_level, rc.irecv_bufsz) == (False, "serialized", 1024)


def test_unknown_options_are_refused_as_by_mpi4py(rc):
    with pytest.raises(TypeError, match="no option 'initialise'"):
        rc.initialise = False
    with pytest.raises(TypeError, match="unexpected argument 'thread'"):
        rc(initialize=False, thread="single")
    assert rc.initialize is DEFAULTS["initialize"]  # nothing was set by the refused call


# -- what import reads -----------------------------------------------------------------------------


def test_resolve_reads_the_options_and_computes_finalize(rc):
    options = rcoptions.resolve({})
    assert options == rcoptions.RcOptions()
    assert options.thread_level == THREAD_MULTIPLE and options.finalize is True
    rc(initialize=False, thread_level="funneled", errors="fatal")
    options = rcoptions.resolve({})
    assert options.initialize is False and options.finalize is False  # None: as initialize
    assert options.thread_level == THREAD_FUNNELED and options.errors == "fatal"
    rc.finalize = True
    assert rcoptions.resolve({}).finalize is True


def test_the_environment_overrides_the_program_and_is_written_back(rc):
    rc.initialize = True
    env = {
        "OMPY_RC_INITIALIZE": "no",
        "OMPY_RC_THREAD_LEVEL": "Single",
        "OMPY_RC_IRECV_BUFSZ": "4096",
        "OMPY_RC_FINALIZE": "yes",
        "OMPY_RC_ERRORS": "abort",
    }
    options = rcoptions.resolve(env)
    assert options.initialize is False and options.finalize is True
    assert options.thread_level == THREAD_SINGLE and options.irecv_bufsz == 4096
    assert options.errors == "abort"
    assert (rc.initialize, rc.thread_level, rc.irecv_bufsz) == (False, "single", 4096)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("initialize", "maybe"),
        ("threads", 2),
        ("thread_level", "many"),
        ("finalize", "sometimes"),
        ("irecv_bufsz", -1),
        ("errors", "ignore"),
    ],
)
def test_a_bad_value_warns_and_keeps_the_default(rc, name, value):
    setattr(rc, name, value)
    with pytest.warns(RuntimeWarning, match=f"ompy.rc.{name}: unexpected value"):
        options = rcoptions.resolve({})
    defaults = rcoptions.RcOptions()
    assert getattr(options, name) == getattr(defaults, name)


# -- import in a fresh interpreter (a singleton: a job of one process) ---------------------------


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPY_")}
    env.update(extra)
    return env


def _run(program: str, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        env=_clean_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


def test_without_initialize_the_program_initializes_and_finalizes_itself():
    out = _run(
        """
        import ompy.rc
        ompy.rc(initialize=False)
        from ompy import MPI
        assert not MPI.Is_initialized()
        provided = MPI.Init_thread(MPI.THREAD_FUNNELED)
        assert MPI.Is_initialized() and MPI.COMM_WORLD.Get_size() == 1
        MPI.Finalize()
        print(provided, MPI.Is_finalized())
        """
    )
    assert out == f"{THREAD_FUNNELED} True"


def test_threads_off_initializes_with_init():
    out = _run(
        """
        from ompy import rc
        rc.threads = False
        from ompy import MPI
        print(MPI.Is_initialized(), MPI.Query_thread())
        """
    )
    assert out == f"True {THREAD_SINGLE}"


def test_thread_level_from_the_environment_wins():
    out = _run(
        """
        import ompy.rc
        ompy.rc.thread_level = "serialized"
        from ompy import MPI
        print(MPI.Query_thread(), ompy.rc.thread_level)
        """,
        OMPY_RC_THREAD_LEVEL="funneled",
    )
    assert out == f"{THREAD_FUNNELED} funneled"
