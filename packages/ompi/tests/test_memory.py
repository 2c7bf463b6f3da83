"""``MPI.buffer``, ``Alloc_mem``/``Free_mem`` and addresses, as mpi4py 4.1 defines them."""

import array
import ctypes
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi.api import rc

rc.initialize = False  # nothing here needs MPI initialized
from ompy import MPI  # noqa: E402
from ompy.ompi.memory import AINT_MAX, AINT_MIN  # noqa: E402

buffer = MPI.buffer


# -- construction -------------------------------------------------------------------------------


def test_memory_is_the_same_class_and_nothing_derives_from_it():
    assert MPI.memory is MPI.buffer
    with pytest.raises(TypeError, match="not an acceptable base type"):
        type("Derived", (buffer,), {})


def test_an_empty_buffer_has_no_memory_and_exports_zero_bytes():
    buf = buffer()
    assert (buf.address, buf.obj, buf.nbytes, len(buf)) == (0, None, 0, 0)
    assert (buf.readonly, buf.format, buf.itemsize) == (False, "B", 1)
    assert not buf
    buf[:] = 0
    buf[:] = buffer()
    view = memoryview(buf)
    assert (view.format, view.itemsize, view.ndim, view.shape, view.strides) == (
        "B",
        1,
        1,
        (0,),
        (1,),
    )
    assert view.tobytes() == b"" and not view.readonly


@pytest.mark.parametrize("bad", [None, 0, 0.0, [], (), "text"])
def test_only_buffer_like_objects_make_a_buffer(bad):
    with pytest.raises(TypeError, match="expecting a buffer-like object"):
        buffer(bad)
    with pytest.raises(TypeError, match="expecting a buffer-like object"):
        buffer.frombuffer(bad)


def test_a_buffer_over_bytes_is_read_only_and_over_a_bytearray_writable():
    data = b"abc"
    ro = buffer(data)
    assert ro.obj is data and ro.nbytes == 3 and ro.readonly
    with pytest.raises(TypeError, match="read-only"):
        ro[:] = 0
    target = bytearray(b"abc")
    rw = buffer(target)
    assert rw.obj is target and not rw.readonly
    rw[0] = 65
    assert target == b"Abc"
    with pytest.raises(ValueError, match="slice length does not match"):
        rw[0:1] = rw[1:3]


def test_a_buffer_over_an_array_spans_all_its_bytes():
    data = array.array("i", [1, 2, 3])
    buf = buffer(data)
    assert buf.obj is data and buf.nbytes == 3 * data.itemsize and not buf.readonly
    grid = np.zeros((3, 4))
    assert buffer(grid).nbytes == grid.nbytes and buffer(grid).address == grid.ctypes.data


def test_allocate_gives_fresh_memory_and_checks_its_size():
    for size in (0, 1, 2, 1024):
        buf = buffer.allocate(size, clear=True)
        assert buf.nbytes == size and buf.address != 0 and not buf.readonly
        assert memoryview(buf.obj).nbytes == size
        assert buf.tobytes() == bytes(size)
    with pytest.raises(TypeError, match="nbytes must be an integer"):
        buffer.allocate(None)
    with pytest.raises(ValueError, match="non-negative"):
        buffer.allocate(-1)
    with pytest.raises(OverflowError, match="MPI_Aint"):
        buffer.allocate(2**70)


def test_frombuffer_asks_for_write_access_unless_told_read_only():
    with pytest.raises(BufferError, match="read-only"):
        buffer.frombuffer(b"abc")
    buf = buffer.frombuffer(b"abc", readonly=True)
    assert type(buf.obj) is bytes and buf.readonly and buf.address != 0
    assert memoryview(buf).readonly and memoryview(buf).tolist() == [97, 98, 99]
    target = array.array("B", [1, 2, 3])
    view_only = buffer.frombuffer(target, readonly=True)
    assert view_only.readonly and memoryview(view_only).readonly
    with pytest.raises(TypeError, match="read-only"):
        view_only[0] = 9
    writable = buffer.frombuffer(target)
    writable[:] = 1
    writable[1:] = array.array("B", [7, 7])
    assert target == array.array("B", [1, 7, 7])


def test_fromaddress_lies_over_memory_the_program_names():
    target = array.array("B", [1, 2, 3])
    address, size = target.buffer_info()
    buf = buffer.fromaddress(address, size)
    assert buf.address == address and buf.nbytes == 3 and buf.obj is None
    buf[:] = 1
    buf[1:2] = b"\x08"
    assert target == array.array("B", [1, 8, 1])
    ro = buffer.fromaddress(address, size, readonly=True)
    assert ro.readonly and ro.tobytes() == b"\x01\x08\x01"
    assert buffer.fromaddress(address, 0).address == address
    with pytest.raises(ValueError, match="non-negative"):
        buffer.fromaddress(address, -1)
    with pytest.raises(ValueError, match="non-NULL"):
        buffer.fromaddress(0, 1)
    with pytest.raises(OverflowError, match="not a memory address"):
        buffer.fromaddress(-5, 1)


def test_toreadonly_and_release():
    target = bytearray(b"abc")
    first = buffer.frombuffer(target)
    second = first.toreadonly()
    assert not first.readonly and second.readonly
    assert (first.address, first.obj, first.nbytes) == (second.address, second.obj, second.nbytes)
    with pytest.raises(TypeError, match="read-only"):
        second[0] = 1
    first.release()
    assert (first.address, first.nbytes, len(first), first.readonly) == (0, 0, 0, False)
    assert first.obj is None and first.tobytes() == b"" and not first
    with pytest.raises(IndexError):
        first[0]


# -- the sequence -------------------------------------------------------------------------------


def test_indexing_reads_and_writes_single_bytes():
    buf = buffer.allocate(16)
    for i in range(16):
        buf[i] = i
    assert [buf[i] for i in range(16)] == list(range(16)) and list(buf) == list(range(16))
    assert buf[-1] == 15 and type(buf[0]) is int
    for bad_index, error in ((16, IndexError), (-17, IndexError), (None, TypeError)):
        with pytest.raises(error):
            buf[bad_index]
        with pytest.raises(error):
            buf[bad_index] = 0
    with pytest.raises(IndexError, match="step"):
        buf[::2]
    with pytest.raises(IndexError, match="step"):
        buf[::2] = 0
    with pytest.raises(NotImplementedError):
        del buf[0]
    with pytest.raises(OverflowError, match=r"0\.\.255"):
        buf[0] = 256
    with pytest.raises(TypeError, match="must be an integer"):
        buf[0] = 1.5
    buf[:] = 255
    assert buf.tobytes() == b"\xff" * 16
    buf[4:8] = b"abcd"
    assert buf[4:8].tobytes() == b"abcd" and buf[2:4].tobytes() == b"\xff\xff"


def test_a_buffer_is_not_a_number_and_compares_by_identity():
    buf = buffer.allocate(4)
    with pytest.raises(TypeError):
        buf + 1
    other = buffer(buf)
    same = buf
    assert buf == same and buf != other and len({buf, other}) == 2
    with pytest.raises(TypeError, match="cannot pickle"):
        pickle.dumps(buf)
    assert "nbytes=4" in repr(buf)


@given(
    size=st.integers(0, 64),
    start=st.integers(-80, 80) | st.none(),
    stop=st.integers(-80, 80) | st.none(),
)
def test_slices_are_views_with_the_bytes_and_address_python_slicing_gives(size, start, stop):
    data = bytearray(range(size))
    buf = buffer(data)
    piece = buf[start:stop]
    expected = data[start:stop]
    assert piece.tobytes() == bytes(expected) and piece.nbytes == len(expected)
    first = slice(start, stop).indices(size)[0]
    assert piece.address == buf.address + first and piece.obj is buf
    if len(expected):
        piece[:] = 7  # a view: writing through the slice writes the original
        assert data[first : first + len(expected)] == bytes([7]) * len(expected)


@given(
    rows=st.integers(1, 6),
    cols=st.integers(1, 6),
    code=st.sampled_from(["b", "B", "h", "i", "q", "f", "d"]),
)
def test_cast_views_the_bytes_with_another_format_and_shape(rows, cols, code):
    itemsize = np.dtype(code).itemsize
    buf = buffer.allocate(rows * cols * itemsize)
    flat = buf.cast(code)
    values = np.arange(rows * cols).astype(code)
    for index, value in enumerate(values.tolist()):
        flat[index] = value
    grid = buf.cast(code, (rows, cols))
    assert grid.shape == (rows, cols) and grid.format == code
    assert np.array_equal(np.asarray(grid), values.reshape(rows, cols))
    assert buf.tobytes() == values.tobytes()


# -- Alloc_mem / Free_mem ---------------------------------------------------------------------


def test_alloc_mem_gives_page_aligned_zeroed_memory_that_free_mem_releases():
    mem = MPI.Alloc_mem(100)
    assert type(mem) is MPI.buffer and mem.nbytes == 100 and not mem.readonly
    assert mem.address % 4096 == 0 and mem.tobytes() == bytes(100)
    np.frombuffer(mem, dtype=np.uint8)[:] = 3  # usable by numpy, in place
    assert mem[99] == 3
    MPI.Free_mem(mem)
    assert (mem.address, mem.nbytes, mem.readonly) == (0, 0, False)
    with pytest.raises(MPI.Exception) as info:
        MPI.Free_mem(mem)
    assert info.value.Get_error_class() == MPI.ERR_BASE


def test_alloc_mem_honours_the_alignment_hint_and_checks_its_arguments():
    mem = MPI.Alloc_mem(10, MPI.Info.Create({"mpi_minimum_memory_alignment": str(1 << 16)}))
    assert mem.address % (1 << 16) == 0 and mem.nbytes == 10
    for bad in ("3", "zero", "-8"):
        with pytest.raises(MPI.Exception) as info:
            MPI.Alloc_mem(8, MPI.Info.Create({"mpi_minimum_memory_alignment": bad}))
        assert info.value.Get_error_class() == MPI.ERR_INFO_VALUE
    assert MPI.Alloc_mem(8, MPI.INFO_NULL).nbytes == 8
    with pytest.raises(TypeError, match="info must be an Info"):
        MPI.Alloc_mem(8, {"mpi_minimum_memory_alignment": "64"})  # mpi4py takes an Info only
    with pytest.raises(MPI.Exception) as info:
        MPI.Alloc_mem(-1)
    assert info.value.Get_error_class() == MPI.ERR_SIZE
    with pytest.raises(TypeError):
        MPI.Alloc_mem("8")
    with pytest.raises(MPI.Exception) as info:
        MPI.Free_mem(buffer.allocate(8))  # not from Alloc_mem
    assert info.value.Get_error_class() == MPI.ERR_BASE
    with pytest.raises(TypeError, match=r"expecting the MPI\.buffer"):
        MPI.Free_mem(bytearray(8))
    assert MPI.Alloc_mem(0).nbytes == 0


# -- addresses ------------------------------------------------------------------------------------


def test_get_address_is_the_first_byte_of_the_memory():
    data = np.arange(10, dtype=np.int32)
    assert MPI.Get_address(data) == data.ctypes.data
    assert MPI.Get_address(data[3:]) - MPI.Get_address(data) == 12
    raw = ctypes.create_string_buffer(8)
    assert MPI.Get_address(raw) == ctypes.addressof(raw)
    mem = MPI.Alloc_mem(16)
    assert MPI.Get_address(mem) == mem.address and MPI.Get_address(mem[5:]) == mem.address + 5
    assert MPI.Get_address(MPI.BOTTOM) == 0
    with pytest.raises(TypeError):
        MPI.Get_address(3.5)


aints = st.integers(AINT_MIN, AINT_MAX)


@given(base=aints, disp=aints)
def test_aint_add_and_diff_are_inverse_as_in_c(base, disp):
    total = MPI.Aint_add(base, disp)
    assert AINT_MIN <= total <= AINT_MAX
    assert MPI.Aint_diff(total, base) == disp
    assert (total - (base + disp)) % (1 << (AINT_MAX.bit_length() + 1)) == 0


@given(offset=st.integers(0, 63))
def test_address_arithmetic_walks_through_a_buffer(offset):
    data = np.zeros(64, dtype=np.uint8)
    base = MPI.Get_address(data)
    assert MPI.Aint_add(base, offset) == MPI.Get_address(data[offset:])
    assert MPI.Aint_diff(MPI.Get_address(data[offset:]), base) == offset


def test_aint_arguments_must_be_integers_of_address_width():
    with pytest.raises(TypeError, match="Aint_add: base must be an integer"):
        MPI.Aint_add(1.0, 2)
    with pytest.raises(OverflowError, match="Aint_diff: addr2"):
        MPI.Aint_diff(0, 2**64)
