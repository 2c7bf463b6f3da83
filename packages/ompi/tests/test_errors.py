"""MPI error classes and MPI.Exception behave as mpi4py's on Open MPI."""

import pickle

import pytest

from ompy.ompi import constants, errors
from ompy.ompi.errors import Exception as MPIException


def test_error_classes_have_open_mpi_numbers():
    assert errors.SUCCESS == 0
    assert errors.ERR_BUFFER == 1
    assert errors.ERR_COUNT == 2
    assert errors.ERR_TYPE == 3
    assert errors.ERR_TAG == 4
    assert errors.ERR_COMM == 5
    assert errors.ERR_RANK == 6
    assert errors.ERR_GROUP == 9
    assert errors.ERR_ARG == 13
    assert errors.ERR_UNKNOWN == 14
    assert errors.ERR_TRUNCATE == 15
    assert errors.ERR_OTHER == 16
    assert errors.ERR_INTERN == 17
    assert errors.ERR_IN_STATUS == 18
    assert errors.ERR_PENDING == 19
    assert errors.ERR_WIN == 53
    assert errors.ERR_LASTCODE == 92


def test_error_class_table_lists_every_err_name_once():
    assert errors.ERROR_CLASSES["ERR_TRUNCATE"] == 15
    assert errors.ERROR_CLASSES["SUCCESS"] == 0
    # ERR_ABI is ERR_LASTCODE, as in mpi4py on Open MPI 5 (which has no ABI error class).
    assert errors.ERROR_CLASSES["ERR_ABI"] == errors.ERR_LASTCODE
    named = {v for k, v in errors.ERROR_CLASSES.items() if k not in ("ERR_LASTCODE", "ERR_ABI")}
    assert len(named) == len(errors.ERROR_CLASSES) - 2
    assert all(errors.is_error_class(value) for value in named)


def test_exception_carries_code_class_and_string():
    error = MPIException(errors.ERR_TRUNCATE)
    assert isinstance(error, RuntimeError)
    assert error.Get_error_code() == error.error_code == 15
    assert error.Get_error_class() == error.error_class == errors.ERR_TRUNCATE
    assert error.Get_error_string() == error.error_string == "MPI_ERR_TRUNCATE: message truncated"
    assert str(error) == "MPI_ERR_TRUNCATE: message truncated"
    assert repr(error) == "MPI.Exception(15)"


def test_exception_compares_and_converts_like_its_code():
    error = MPIException(errors.ERR_RANK)
    assert error == errors.ERR_RANK
    assert error != errors.ERR_TAG
    assert int(error) == 6
    assert hash(error) == hash(6)
    assert bool(error)
    assert not MPIException()
    assert MPIException() == errors.SUCCESS


def test_exception_detail_says_what_was_wrong():
    """The class's name, then the detail: its generic meaning would only add noise
    ("MPI_ERR_OTHER: known error not in list: Finalize: MPI is finalized")."""
    error = MPIException(errors.ERR_TRUNCATE, "received 80 bytes into a buffer of 40")
    assert str(error) == "MPI_ERR_TRUNCATE: received 80 bytes into a buffer of 40"
    assert error.Get_error_string() == "MPI_ERR_TRUNCATE: message truncated"
    finalized = MPIException(errors.ERR_OTHER, "Finalize: MPI is finalized")
    assert str(finalized) == "MPI_ERR_OTHER: Finalize: MPI is finalized"


def test_without_a_detail_the_message_is_the_error_string():
    assert str(MPIException(errors.ERR_TRUNCATE)) == "MPI_ERR_TRUNCATE: message truncated"


def test_negative_code_becomes_unknown():
    assert MPIException(-5).Get_error_code() == errors.ERR_UNKNOWN


def test_unknown_code_maps_to_class_unknown():
    assert errors.Get_error_class(1000) == errors.ERR_UNKNOWN
    assert "1000" in errors.Get_error_string(1000)


def test_exception_code_must_be_an_int():
    with pytest.raises(TypeError, match="must be an int"):
        MPIException("15")


def test_exception_pickles_with_its_detail():
    error = pickle.loads(pickle.dumps(MPIException(errors.ERR_TAG, "tag -3")))
    assert error == errors.ERR_TAG
    assert error.detail == "tag -3"


def test_error_class_name():
    assert errors.error_class_name(errors.ERR_COUNT) == "MPI_ERR_COUNT"
    with pytest.raises(ValueError, match="not a predefined MPI error class"):
        errors.error_class_name(60)


def test_constants_have_open_mpi_values():
    assert constants.ANY_SOURCE == -1
    assert constants.ANY_TAG == -1
    assert constants.PROC_NULL == -2
    assert constants.ROOT == -4
    assert constants.UNDEFINED == -32766
    assert (constants.IDENT, constants.CONGRUENT, constants.SIMILAR, constants.UNEQUAL) == (
        0,
        1,
        2,
        3,
    )
    assert constants.THREAD_SINGLE < constants.THREAD_FUNNELED < constants.THREAD_SERIALIZED
    assert constants.THREAD_MULTIPLE == 3
    assert constants.TAG_UB == 0
    assert constants.TAG_UB_VALUE == 2**31 - 1


def test_special_addresses_are_distinct_singletons_that_pickle():
    assert constants.BOTTOM == 0 and repr(constants.BOTTOM) == "BOTTOM"
    assert constants.IN_PLACE == 1 and repr(constants.IN_PLACE) == "IN_PLACE"
    assert constants.BottomType() is constants.BOTTOM
    assert constants.InPlaceType() is constants.IN_PLACE
    assert constants.BufferAutomaticType() is constants.BUFFER_AUTOMATIC
    for special in (constants.BOTTOM, constants.IN_PLACE, constants.BUFFER_AUTOMATIC):
        assert pickle.loads(pickle.dumps(special)) is special
