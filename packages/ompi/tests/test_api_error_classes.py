"""Error classes, codes and strings a program adds (MPI.Add_error_class, ... Remove_error_string),
kept per instance, and MPI.Exception compared with ints."""

import pickle

import pytest

from ompy.ompi.api import rc
from ompy.ompi.api.testing import default_instance, make_world, no_default_instance
from ompy.ompi.instance import adopted

rc.initialize = False  # these tests use loopback instances, not a launched process
from ompy import MPI  # noqa: E402


@pytest.fixture
def instance():
    with default_instance() as instance:
        yield instance


def _error_class(info: pytest.ExceptionInfo) -> int:
    return info.value.Get_error_class()


@pytest.fixture
def world():
    """A one-rank loopback world whose instance is the default one."""
    (world,) = make_world(1)
    with adopted(world._c.instance):
        yield world


def test_added_classes_and_codes_follow_lastusedcode(world):
    instance = world._c.instance
    assert world.Get_attr(MPI.LASTUSEDCODE) == MPI.ERR_LASTCODE
    errclass = MPI.Add_error_class()
    assert errclass == MPI.ERR_LASTCODE + 1 == world.Get_attr(MPI.LASTUSEDCODE)
    code = MPI.Add_error_code(errclass)
    other = MPI.Add_error_code(MPI.ERR_OTHER)  # a code in a predefined class
    assert (code, other) == (errclass + 1, errclass + 2)
    assert instance.error_codes.last_used == other == world.Get_attr(MPI.LASTUSEDCODE)
    assert MPI.Get_error_class(code) == errclass and MPI.Get_error_class(errclass) == errclass
    assert MPI.Get_error_class(other) == MPI.ERR_OTHER
    assert MPI.Get_error_class(other + 1) == MPI.ERR_UNKNOWN  # never handed out


def test_strings_of_added_classes_and_codes(instance):
    errclass = MPI.Add_error_class()
    code = MPI.Add_error_code(errclass)
    assert MPI.Get_error_string(errclass) == MPI.Get_error_string(code) == ""
    MPI.Add_error_string(errclass, "library class")
    MPI.Add_error_string(code, "library code")
    MPI.Add_error_string(code, "library code, again")  # replaces
    assert MPI.Get_error_string(errclass) == "library class"
    error = MPI.Exception(code)
    assert error.Get_error_class() == errclass and error.error_string == "library code, again"
    assert str(MPI.Exception(code, "while reading")) == "library code, again: while reading"
    with pytest.raises(MPI.Exception, match="MAX_ERROR_STRING") as info:
        MPI.Add_error_string(code, "x" * MPI.MAX_ERROR_STRING)
    assert _error_class(info) == MPI.ERR_ARG
    with pytest.raises(MPI.Exception, match="predefined") as info:
        MPI.Add_error_string(MPI.ERR_OTHER, "mine")
    assert _error_class(info) == MPI.ERR_ARG
    with pytest.raises(TypeError):
        MPI.Add_error_string(code, b"bytes")


def test_removal_goes_strings_then_codes_then_the_class(instance):
    errclass = MPI.Add_error_class()
    code = MPI.Add_error_code(errclass)
    MPI.Add_error_string(errclass, "c")
    MPI.Add_error_string(code, "k")
    for remove, what in (
        (lambda: MPI.Remove_error_class(errclass), "still has codes"),
        (lambda: MPI.Remove_error_code(code), "still has an error string"),
    ):
        with pytest.raises(MPI.Exception, match=what) as info:
            remove()
        assert _error_class(info) == MPI.ERR_ARG
    MPI.Remove_error_string(code)
    MPI.Remove_error_code(code)
    with pytest.raises(MPI.Exception, match="still has an error string"):
        MPI.Remove_error_class(errclass)
    MPI.Remove_error_string(errclass)
    MPI.Remove_error_class(errclass)
    assert MPI.Get_error_class(code) == MPI.ERR_UNKNOWN
    for remove in (MPI.Remove_error_class, MPI.Remove_error_code, MPI.Remove_error_string):
        for gone in (errclass, code, MPI.SUCCESS, MPI.ERR_OTHER):
            with pytest.raises(MPI.Exception):
                remove(gone)
    assert MPI.Add_error_class() == code + 1  # removed numbers are not reused


def test_codes_go_into_error_classes_only(instance):
    for bad in (MPI.SUCCESS, -1, MPI.ERR_LASTCODE + 50):
        with pytest.raises(MPI.Exception, match="is not an error class") as info:
            MPI.Add_error_code(bad)
        assert _error_class(info) == MPI.ERR_ARG
    code = MPI.Add_error_code(MPI.ERR_OTHER)
    with pytest.raises(MPI.Exception, match="is not an error class"):
        MPI.Add_error_code(code)  # a code is not a class
    with pytest.raises(TypeError):
        MPI.Add_error_code("16")


def test_each_instance_has_its_own_table():
    with default_instance() as first:
        mine = MPI.Add_error_class()
        MPI.Add_error_string(mine, "first")
    with default_instance() as second:
        assert MPI.Add_error_class() == mine  # numbering starts afresh per instance
        assert MPI.Get_error_string(mine) == ""
    assert first.error_codes.string_of(mine) == "first" and second is not first


def test_without_an_instance_the_calls_say_mpi_is_not_usable():
    with no_default_instance():
        with pytest.raises(MPI.Exception, match=r"MPI\.Add_error_class: MPI is"):
            MPI.Add_error_class()
        assert MPI.Get_error_class(MPI.ERR_LASTCODE + 1) == MPI.ERR_UNKNOWN


# -- MPI.Exception and ints ------------------------------------------------------------------------


def test_exceptions_compare_order_and_hash_like_their_codes():
    truncate = MPI.Exception(MPI.ERR_TRUNCATE)
    assert (
        truncate == MPI.ERR_TRUNCATE and truncate != MPI.ERR_OTHER and truncate == MPI.ERR_TRUNCATE
    )
    assert MPI.SUCCESS < truncate < MPI.ERR_OTHER and truncate <= 15 <= truncate
    assert truncate > MPI.Exception(MPI.SUCCESS) and truncate >= MPI.Exception(MPI.ERR_TRUNCATE)
    assert truncate < 16 and hash(truncate) == hash(15) and int(truncate) == 15
    assert {truncate: 1}[MPI.Exception(15)] == 1 and not MPI.Exception(MPI.SUCCESS)
    with pytest.raises(TypeError):
        _ = truncate < "15x"
    assert truncate != "text"
    assert MPI.Exception(-3) == MPI.ERR_UNKNOWN
    assert MPI.Exception(MPI.ERR_LASTCODE + 1) == MPI.ERR_LASTCODE + 1
    assert pickle.loads(pickle.dumps(truncate)) == truncate


def test_err_abi_is_there_as_in_mpi4py_on_open_mpi():
    assert MPI.ERR_ABI == MPI.ERR_LASTCODE and "ERR_ABI" in MPI.__all__
