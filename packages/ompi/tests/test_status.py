"""Status: fields, counts in elements of a datatype, copies and cancellation."""

import pickle

import pytest

from ompy.ompi import errors
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG, UNDEFINED
from ompy.ompi.datatype import predefined as mpi
from ompy.ompi.status import Status


def received(source=3, tag=7, nbytes=24):
    status = Status()
    status.source, status.tag, status.nbytes = source, tag, nbytes
    return status


def test_a_new_status_is_from_any_source_with_any_tag_and_no_error():
    status = Status()
    assert (status.Get_source(), status.Get_tag(), status.Get_error()) == (
        ANY_SOURCE,
        ANY_TAG,
        errors.SUCCESS,
    )
    assert status.Get_count() == 0
    assert not status.Is_cancelled()


def test_setters_and_properties_agree():
    status = Status()
    status.Set_source(2)
    status.Set_tag(5)
    status.Set_error(errors.ERR_TRUNCATE)
    assert (status.source, status.tag, status.error) == (2, 5, errors.ERR_TRUNCATE)
    status.source, status.tag, status.error = 4, 6, errors.SUCCESS
    assert (status.Get_source(), status.Get_tag(), status.Get_error()) == (4, 6, 0)


def test_count_is_in_elements_of_the_given_datatype():
    status = received(nbytes=24)
    assert status.Get_count() == status.count == 24  # bytes by default
    assert status.Get_count(mpi.DOUBLE) == 3
    assert status.Get_count(mpi.INT) == 6
    assert status.Get_count(mpi.C_DOUBLE_COMPLEX) == UNDEFINED


def test_elements_and_set_elements():
    status = Status()
    status.Set_elements(mpi.DOUBLE_INT, 3)  # one pair and a double
    assert status.Get_count(mpi.BYTE) == 20
    assert status.Get_elements(mpi.DOUBLE_INT) == 3
    assert status.Get_count(mpi.DOUBLE_INT) == UNDEFINED
    with pytest.raises(errors.Exception) as info:
        status.Set_elements(mpi.INT, -1)
    assert info.value.Get_error_class() == errors.ERR_COUNT


def test_cancellation_flag():
    status = Status()
    status.Set_cancelled(True)
    assert status.Is_cancelled() and status.cancelled


def test_copy_and_equality():
    original = received()
    copy = Status(original)
    assert copy == original and copy is not original
    copy.tag = 8
    assert copy != original
    assert pickle.loads(pickle.dumps(original)) == original


def test_bad_arguments():
    with pytest.raises(TypeError, match="expecting a Datatype"):
        Status().Get_count("d")
    with pytest.raises(TypeError, match="copies a Status"):
        Status(3)
