"""Buffer specifications: every form mpi4py accepts, and a clear error for everything else."""

import array

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.constants import BOTTOM, IN_PLACE
from ompy.ompi.datatype import DATATYPE_NULL
from ompy.ompi.datatype import predefined as mpi
from ompy.ompi.datatype.buffer import (
    NonContiguousBufferError,
    ReadOnlyBufferError,
    parse_buffer,
)


class DLPackOnly:
    """Exports its memory through DLPack only (no buffer protocol)."""

    def __init__(self, array, device=(1, 0)):
        self._array = array
        self._device = device

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._device


class ArrayInterfaceOnly:
    def __init__(self, array):
        self._array = array
        self.__array_interface__ = array.__array_interface__


class CudaOnly:
    __cuda_array_interface__ = {"shape": (3,), "typestr": "<f8", "data": (0, False), "version": 3}


# -- the forms -------------------------------------------------------------------------------------


def test_a_bare_array_is_the_whole_array_with_its_datatype():
    data = np.arange(10.0)
    spec = parse_buffer(data)
    assert spec.count == 10
    assert spec.datatype is mpi.DOUBLE
    assert spec.nbytes == 80 and spec.offset == 0
    assert spec.view.format == "B" and spec.view.ndim == 1
    assert bytes(spec.view) == data.tobytes()
    assert not spec.in_place


def test_buf_and_datatype_counts_whole_elements():
    spec = parse_buffer([np.zeros(4, dtype="i8"), mpi.INT])
    assert (spec.count, spec.datatype, spec.nbytes) == (8, mpi.INT, 32)


def test_buf_count_datatype_takes_the_first_elements():
    data = np.arange(10.0)
    spec = parse_buffer([data, 3, mpi.DOUBLE])
    assert spec.count == 3 and bytes(spec.view) == data[:3].tobytes()


def test_count_and_displacement_select_a_slice():
    data = np.arange(10.0)
    for msg in ([data, (3, 2), mpi.DOUBLE], [data, 3, 2, mpi.DOUBLE], [data, (3, 2)]):
        spec = parse_buffer(msg)
        assert spec.count == 3 and spec.offset == 16
        assert bytes(spec.view) == data[2:5].tobytes()


def test_a_count_without_datatype_infers_the_datatype():
    spec = parse_buffer([np.arange(5, dtype=np.int32), 2])
    assert (spec.count, spec.datatype) == (2, mpi.INT)


def test_a_type_code_may_stand_for_the_datatype():
    assert parse_buffer([bytearray(16), "d"]).datatype is mpi.DOUBLE
    assert parse_buffer([bytearray(16), 2, "i4"]).datatype is mpi.INT32_T


def test_the_view_writes_into_the_receive_buffer():
    data = np.zeros(4, dtype=np.int32)
    spec = parse_buffer([data, (2, 1), mpi.INT], readonly=False)
    spec.view[:] = np.array([7, 8], dtype=np.int32).tobytes()
    assert data.tolist() == [0, 7, 8, 0]


@pytest.mark.parametrize(
    ("obj", "datatype", "count"),
    [
        (b"abc", mpi.UNSIGNED_CHAR, 3),
        (bytearray(5), mpi.UNSIGNED_CHAR, 5),
        (array.array("i", [1, 2, 3]), mpi.INT, 3),
        (array.array("d", [1.0]), mpi.DOUBLE, 1),
        (memoryview(np.zeros(3, complex)), mpi.C_DOUBLE_COMPLEX, 3),
        (np.zeros(3, dtype=np.float32), mpi.FLOAT, 3),
        (np.zeros(3, dtype=np.int64), mpi.LONG, 3),
        (np.zeros(3, dtype=np.longlong), mpi.LONG_LONG, 3),
        (np.zeros(3, dtype=np.uint16), mpi.UNSIGNED_SHORT, 3),
        (np.zeros(3, dtype=bool), mpi.C_BOOL, 3),
        (np.zeros(3, dtype=np.complex64), mpi.C_FLOAT_COMPLEX, 3),
        (np.zeros(2, dtype="S3"), mpi.CHAR, 6),
        (np.zeros(2, dtype="U3"), mpi.WCHAR, 6),
        (np.zeros(3, dtype=mpi.DOUBLE_INT.dtype), mpi.DOUBLE_INT, 3),
        (np.zeros(3, dtype=[("a", "f4"), ("b", "i4")]), mpi.FLOAT_INT, 3),
        (np.array(2.5), mpi.DOUBLE, 1),
    ],
)
def test_datatype_inference(obj, datatype, count):
    spec = parse_buffer(obj)
    assert spec.datatype is datatype
    assert spec.count == count


def test_multidimensional_and_fortran_ordered_arrays_are_flattened_in_memory_order():
    data = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    spec = parse_buffer(data, readonly=False)
    assert spec.count == 12
    assert bytes(spec.view) == data.tobytes(order="F")
    spec.view[:8] = np.array([99.0]).tobytes()
    assert data[0, 0] == 99.0


def test_dlpack_objects_on_the_cpu_are_accepted():
    data = np.arange(4, dtype=np.int32)
    spec = parse_buffer(DLPackOnly(data))
    assert spec.datatype is mpi.INT and bytes(spec.view) == data.tobytes()


def test_dlpack_objects_on_a_device_are_refused():
    with pytest.raises(TypeError, match=r"on device CUDA:0 .*not in host memory"):
        parse_buffer(DLPackOnly(np.zeros(2), device=(2, 0)))


def test_array_interface_objects_are_accepted():
    data = np.arange(3.0)
    spec = parse_buffer(ArrayInterfaceOnly(data), readonly=False)
    spec.view[:8] = np.array([5.0]).tobytes()
    assert data[0] == 5.0


def test_gpu_memory_is_refused_clearly():
    with pytest.raises(TypeError, match=r"device \(GPU\) memory"):
        parse_buffer(CudaOnly())


def test_none_and_bottom_are_empty_messages():
    for msg in (None, BOTTOM, [None, 0, mpi.INT], [BOTTOM, mpi.INT]):
        spec = parse_buffer(msg)
        assert spec.count == 0 and spec.nbytes == 0
    assert parse_buffer([None, 0, mpi.INT]).datatype is mpi.INT


def test_in_place_only_where_allowed():
    assert parse_buffer(IN_PLACE, in_place=True).in_place
    with pytest.raises(TypeError, match="IN_PLACE is only valid as the send buffer"):
        parse_buffer(IN_PLACE)


# -- the errors -----------------------------------------------------------------------------------


def test_read_only_receive_buffer():
    for obj in (b"abcd", np.zeros(2).copy().view(), memoryview(bytearray(4)).toreadonly()):
        if isinstance(obj, np.ndarray):
            obj.flags.writeable = False
        with pytest.raises(ReadOnlyBufferError, match="read-only") as info:
            parse_buffer(obj, readonly=False)
        assert isinstance(info.value, BufferError) and isinstance(info.value, TypeError)
    assert parse_buffer(b"abcd").count == 4  # fine to send from


def test_count_larger_than_the_buffer():
    with pytest.raises(ValueError, match=r"11 x MPI_DOUBLE \(88 bytes\) does not fit .* 80 bytes"):
        parse_buffer([np.arange(10.0), 11, mpi.DOUBLE])
    with pytest.raises(ValueError, match="at displacement 8"):
        parse_buffer([np.arange(10.0), (3, 8), mpi.DOUBLE])


def test_buffer_not_a_whole_number_of_elements():
    with pytest.raises(ValueError, match="not a whole number of MPI_INT elements of 4 bytes"):
        parse_buffer([bytearray(6), mpi.INT])


def test_non_contiguous_arrays_are_described_by_a_derived_layout_not_refused():
    data = np.arange(10.0)
    spec = parse_buffer(data[::2])
    assert spec.convertor is not None and spec.count == 5 and spec.datatype == mpi.DOUBLE
    assert bytes(spec.packed()) == data[::2].tobytes()
    assert issubclass(NonContiguousBufferError, BufferError)  # still what export_buffer raises


def test_negative_count_is_an_mpi_count_error():
    with pytest.raises(errors.Exception) as info:
        parse_buffer([np.arange(3.0), -1, mpi.DOUBLE])
    assert info.value.Get_error_class() == errors.ERR_COUNT


def test_null_datatype_is_an_mpi_type_error():
    with pytest.raises(errors.Exception) as info:
        parse_buffer([np.arange(3.0), DATATYPE_NULL])
    assert info.value.Get_error_class() == errors.ERR_TYPE


@pytest.mark.parametrize(
    ("msg", "error", "match"),
    [
        (42, TypeError, "expecting a buffer-like object"),
        ([b"ab", 1, mpi.BYTE, 0, 0], ValueError, "got 5 items"),
        ([b"ab", 1.5, mpi.BYTE], TypeError, "int count"),
        ([b"ab", 1, 3.0], TypeError, "Datatype or a type code"),
        ([b"ab", (1, -1), mpi.BYTE], ValueError, "displacement must not be negative"),
        ([None, 3], ValueError, "absolute memory"),
        ([None, (3, 1), mpi.INT], ValueError, "Get_address"),
        ([None, 3, mpi.INT], errors.Exception, "no address of an object"),
        (np.zeros(2, dtype=object), TypeError, "lowercase methods"),
        (np.zeros(2, dtype="V4"), TypeError, "no MPI datatype corresponds"),
        (np.zeros(2, dtype=">i4"), TypeError, "byte order"),
        (np.zeros(2, dtype=[("a", "f8"), ("b", "f8")]), TypeError, "structured dtype"),
    ],
)
def test_bad_messages_say_what_is_wrong(msg, error, match):
    with pytest.raises(error, match=match):
        parse_buffer(msg)


@given(
    size=st.integers(0, 64),
    displ=st.integers(0, 64),
    count=st.integers(0, 64),
    code=st.sampled_from(["b", "h", "i", "q", "f", "d", "D"]),
)
def test_any_fitting_count_and_displacement_gives_exactly_that_slice(size, displ, count, code):
    data = np.arange(size).astype(code)
    fits = displ + count <= size
    if not fits:
        with pytest.raises(ValueError, match="does not fit"):
            parse_buffer([data, (count, displ), code])
        return
    spec = parse_buffer([data, (count, displ), code])
    assert bytes(spec.view) == data[displ : displ + count].tobytes()


@pytest.mark.parametrize(
    "obj",
    [
        *(np.arange(6).astype(code).reshape(2, 3) for code in "?bhilqBHILQfdg"),
        b"abcdef",
        bytearray(b"abcdef"),
    ],
    ids=lambda obj: f"{type(obj).__name__}-{getattr(obj, 'dtype', 'B')}",
)
def test_the_short_path_for_whole_buffers_agrees_with_the_general_one(obj):
    """A bare array, bytes or bytearray parses exactly as when given as [buf, datatype]."""
    short = parse_buffer(obj)
    general = parse_buffer([obj, short.datatype])
    assert short.datatype is general.datatype
    assert short.count == general.count
    assert bytes(short.view) == bytes(general.view)
    assert short.view.format == "B" and short.view.ndim == 1
    if isinstance(obj, np.ndarray):
        assert short.datatype is mpi.TYPECHARS[obj.dtype.char]


# -- buffers of Python object references ------------------------------------------------------


@pytest.mark.parametrize(
    "array",
    [np.empty(3, dtype=object), np.zeros(2, dtype=[("a", "i4"), ("b", "O")])],
    ids=["object", "struct-with-object"],
)
@pytest.mark.parametrize("readonly", [True, False], ids=["send", "receive"])
@pytest.mark.parametrize("typed", [False, True], ids=["inferred", "as-bytes"])
def test_a_buffer_of_object_references_is_refused(array, readonly, typed):
    """Its bytes are addresses: sent, they mean nothing; received into, they crash the rank."""
    msg = [array, mpi.BYTE] if typed else array
    with pytest.raises(TypeError, match=r"references to Python objects.*lowercase methods"):
        parse_buffer(msg, readonly=readonly)


def test_a_field_named_with_an_o_is_data():
    array = np.zeros(3, dtype=[("Oa", "i4"), ("Ob", "f8")])
    spec = parse_buffer([array, mpi.BYTE], readonly=False)
    assert spec.view.nbytes == array.nbytes


def test_a_half_precision_array_is_float16_t_as_in_mpi4py():
    spec = parse_buffer(np.zeros(3, dtype=np.float16))
    assert spec.datatype == mpi.FLOAT16_T and spec.count == 3
