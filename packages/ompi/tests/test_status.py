"""Status: fields, counts in elements of a datatype, copies and cancellation."""

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG, UNDEFINED
from ompy.ompi.datatype import predefined as mpi
from ompy.ompi.status import F_ERROR, F_SOURCE, F_STATUS_SIZE, F_TAG, Status

C_INT = st.integers(-(2**31), 2**31 - 1)


def received(source=3, tag=7, nbytes=24):
    status = Status()
    status.source, status.tag, status.count = source, tag, nbytes
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


@given(source=C_INT, tag=C_INT, error=C_INT, count=st.integers(0, 2**40), cancelled=st.booleans())
def test_every_field_is_settable_and_travels_in_every_form(source, tag, error, count, cancelled):
    status = Status()
    status.source, status.tag, status.error = source, tag, error
    status.count, status.cancelled = count, cancelled
    fields = (source, tag, error, count, cancelled)
    assert (status.source, status.tag, status.error, status.count, status.cancelled) == fields
    assert (status.Get_source(), status.Get_tag(), status.Get_error()) == fields[:3]
    assert status.Get_elements(mpi.BYTE) == count and status.Is_cancelled() is cancelled
    for copy in (Status(status), pickle.loads(pickle.dumps(status)), Status.f2py(status.py2f())):
        assert copy == status
        assert (copy.source, copy.tag, copy.error, copy.count, copy.cancelled) == fields
    other = Status(status)
    other.Set_tag(tag ^ 1)
    assert other != status
    assert not other.__eq__(status)


def test_the_fortran_form_has_the_source_tag_and_error_where_the_constants_say():
    status = Status()
    status.Set_source(11)
    status.Set_tag(22)
    status.Set_error(errors.ERR_TAG)
    form = status.py2f()
    assert len(form) == F_STATUS_SIZE and all(type(item) is int for item in form)
    assert (form[F_SOURCE], form[F_TAG], form[F_ERROR]) == (11, 22, errors.ERR_TAG)
    with pytest.raises(IndexError, match="6 integers"):
        Status.f2py([1, 2, 3])


def test_tomemory_is_a_writable_view_of_the_fields():
    status = Status()
    status.source, status.tag, status.error = 11, 22, 33
    memory = status.tomemory()
    assert memory.format == "i" and len(memory) == F_STATUS_SIZE and not memory.readonly
    values = list(memory)
    memory[values.index(11)] = 111
    memory[values.index(22)] = 222
    memory[values.index(33)] = 333
    assert (status.source, status.tag, status.error) == (111, 222, 333)
    status.Set_cancelled(True)
    assert status.tomemory()[3] == 1


def test_fields_outside_a_c_int_overflow():
    with pytest.raises(OverflowError):
        Status().Set_tag(2**31)
    with pytest.raises(TypeError):
        Status().source = "3"


def test_statuses_do_not_order():
    with pytest.raises(TypeError):
        Status() < Status()  # noqa: B015
