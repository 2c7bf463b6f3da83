"""The ``MPI`` module: mpi4py's names, environment queries, lifecycle state, buffer attach."""

import os
import subprocess
import sys

import numpy as np
import pytest

from ompy.ompi import errors
from ompy.ompi.api import rc
from ompy.ompi.api.testing import interpreter_world

rc.initialize = False  # these tests install a loopback process instead of a launched one
from ompy import MPI  # noqa: E402


@pytest.fixture
def loopback():
    """A one-rank loopback world installed as this interpreter's MPI process."""
    with interpreter_world() as instance:
        yield instance


def test_mpi4py_names_are_there():
    for name in [
        "COMM_WORLD",
        "COMM_SELF",
        "COMM_NULL",
        "REQUEST_NULL",
        "MESSAGE_NULL",
        "MESSAGE_NO_PROC",
        "ANY_SOURCE",
        "ANY_TAG",
        "PROC_NULL",
        "UNDEFINED",
        "IN_PLACE",
        "BOTTOM",
        "THREAD_MULTIPLE",
        "TAG_UB",
        "IDENT",
        "CONGRUENT",
        "SIMILAR",
        "UNEQUAL",
        "COMM_TYPE_SHARED",
        "ERR_TRUNCATE",
        "ERR_RANK",
        "SUCCESS",
        "INT",
        "DOUBLE",
        "BYTE",
        "SUM",
        "MAX",
        "Status",
        "Group",
        "Op",
        "Datatype",
        "Request",
        "Prequest",
        "Message",
        "Comm",
        "Intracomm",
        "Exception",
        "Init",
        "Init_thread",
        "Finalize",
        "Is_initialized",
        "Is_finalized",
        "Query_thread",
        "Is_thread_main",
        "Wtime",
        "Wtick",
        "Get_processor_name",
        "Get_version",
        "Get_library_version",
        "Attach_buffer",
        "Detach_buffer",
        "Get_error_string",
        "BSEND_OVERHEAD",
    ]:
        assert hasattr(MPI, name), name
    assert set(MPI.__all__) <= set(dir(MPI))
    assert MPI.Get_version() == (4, 1)
    assert "ompy" in MPI.Get_library_version()
    assert MPI.Get_error_string(MPI.ERR_TRUNCATE).startswith("MPI_ERR_TRUNCATE")
    assert 0 < MPI.Wtick() < 1e-3 and MPI.Wtime() <= MPI.Wtime()
    assert MPI.Get_processor_name()


BEFORE_INIT = """
from ompy.ompi.api import rc
rc.initialize = False
from ompy import MPI
assert not MPI.Is_initialized() and not MPI.Is_finalized()
try:
    MPI.COMM_WORLD.Get_rank()
except MPI.Exception as error:
    assert "not initialized" in str(error), error
    assert error.Get_error_class() == MPI.ERR_COMM
else:
    raise AssertionError("Get_rank before init did not raise")
try:
    MPI.Attach_buffer(bytearray(10))
except MPI.Exception as error:
    assert "not initialized" in str(error), error
else:
    raise AssertionError("Attach_buffer before init did not raise")
"""


def test_before_init_the_predefined_communicators_say_mpi_is_not_initialized():
    # In a fresh interpreter: another test module of the same run may have initialized MPI.
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPY_")}
    result = subprocess.run(
        [sys.executable, "-c", BEFORE_INIT],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_installed_process_gives_world_self_and_the_buffer_calls(loopback):
    assert MPI.Is_initialized() and MPI.Is_thread_main()
    assert MPI.Query_thread() == MPI.THREAD_SINGLE
    assert MPI.COMM_WORLD.Get_size() == 1 and MPI.COMM_SELF.Get_name() == "MPI_COMM_SELF"
    assert MPI.COMM_WORLD.Get_group().Translate_ranks([0]) == [0]
    buf = bytearray(64 + MPI.BSEND_OVERHEAD)
    MPI.Attach_buffer(buf)
    MPI.COMM_SELF.Bsend(np.arange(8.0), 0, 3)
    assert MPI.Detach_buffer() is buf
    out = np.zeros(8)
    MPI.COMM_SELF.Recv(out, 0, 3)
    assert out.sum() == 28
    with pytest.raises(MPI.Exception) as info:
        MPI.Detach_buffer()
    assert info.value.Get_error_class() == errors.ERR_BUFFER
    with pytest.raises(MPI.Exception, match="already initialized"):
        MPI.Init()


def test_finalize_ends_mpi_for_good(loopback):
    MPI.Finalize()
    assert MPI.Is_finalized()
    with pytest.raises(MPI.Exception, match="finalized"):
        MPI.COMM_WORLD.Send(np.zeros(1), 0)
    with pytest.raises(MPI.Exception, match="cannot be initialized again"):
        MPI.Init_thread()


def test_init_thread_refuses_a_bad_level(no_mpi):
    with pytest.raises(MPI.Exception) as info:
        MPI.Init_thread(7)
    assert info.value.Get_error_class() == MPI.ERR_ARG
