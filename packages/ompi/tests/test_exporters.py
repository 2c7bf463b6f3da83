"""Buffer kinds: DLPack and CUDA-array-interface exporters of host memory are messages; device
memory is refused by name; ompy keeps no exporter alive past the call or request using it."""

from __future__ import annotations

import ctypes
import gc
import mmap
import weakref

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.datatype import predefined as mpi
from ompy.ompi.datatype.buffer import ReadOnlyBufferError, parse_buffer
from ompy.ompi.datatype.exporters import DeviceMemoryError, host_array, host_memory

# -- exporters that are not the buffer protocol -----------------------------------------------


class DLPackExporter:
    """DLPack 1.0 (numpy's own ``__dlpack__``) over a numpy array; no buffer protocol."""

    def __init__(self, array: np.ndarray, device: tuple[int, int] = (1, 0)) -> None:
        self.array = array
        self.device = device
        self.calls: list[dict] = []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


class LegacyDLPackExporter(DLPackExporter):
    """An exporter from before DLPack 1.0: ``__dlpack__(stream=None)`` only."""

    def __dlpack__(self, stream=None):
        self.calls.append({"stream": stream})
        return self.array.__dlpack__(stream=stream)


class CAIExporter:
    """``__cuda_array_interface__`` over a numpy array's host memory (as a CUDA-host library
    would export pinned memory)."""

    def __init__(self, array: np.ndarray, readonly: bool = False) -> None:
        self.array = array
        self.readonly = readonly

    @property
    def __cuda_array_interface__(self):
        return {
            "data": (self.array.ctypes.data, self.readonly),
            "shape": self.array.shape,
            "strides": None if self.array.flags.c_contiguous else self.array.strides,
            "typestr": self.array.dtype.str,
            "version": 3,
        }


class FakeDeviceExporter:
    """``__cuda_array_interface__`` whose pointer is not host memory."""

    def __init__(self, pointer: int, nbytes: int = 24) -> None:
        self.pointer = pointer
        self.nbytes = nbytes

    @property
    def __cuda_array_interface__(self):
        return {
            "data": (self.pointer, False),
            "shape": (self.nbytes // 8,),
            "typestr": "<f8",
            "version": 3,
        }


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


@pytest.fixture
def reserved():
    """A page reserved without access rights (as CUDA reserves device memory in the process,
    for unified addressing), right after a readable and writable page."""
    page = mmap.PAGESIZE
    prot = mmap.PROT_READ | mmap.PROT_WRITE
    base = _libc.mmap(None, 2 * page, prot, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert base not in (None, ctypes.c_void_p(-1).value)
    assert _libc.mprotect(base + page, page, 0) == 0
    yield base + page
    _libc.munmap(base, 2 * page)


#: An address below ``vm.mmap_min_addr`` (4096 at least): never mapped.
UNMAPPED = 8


# -- DLPack ------------------------------------------------------------------------------------


def test_dlpack_is_negotiated_as_numpy_does_and_never_copied():
    data = np.arange(6, dtype=np.int32)
    exporter = DLPackExporter(data)
    spec = parse_buffer(exporter, readonly=False)
    assert exporter.calls[0]["max_version"] == (1, 0) and exporter.calls[0]["copy"] is False
    assert spec.datatype is mpi.INT and spec.count == 6
    spec.view[:4] = np.int32(-7).tobytes()
    assert data[0] == -7  # the receive lands in the exporter's memory


def test_dlpack_read_only_flag_allows_sends_and_refuses_receives():
    data = np.arange(3.0)
    data.flags.writeable = False
    assert bytes(parse_buffer(DLPackExporter(data)).view) == data.tobytes()
    with pytest.raises(ReadOnlyBufferError, match="DLPack export is read-only"):
        parse_buffer(DLPackExporter(data), readonly=False)


def test_legacy_dlpack_exporters_are_writable_as_in_mpi4py():
    data = np.arange(4.0)
    exporter = LegacyDLPackExporter(data)
    spec = parse_buffer(exporter)
    assert exporter.calls[-1] == {"stream": None}  # asked the pre-1.0 way
    assert spec.datatype is mpi.DOUBLE and bytes(spec.view) == data.tobytes()
    spec = parse_buffer(LegacyDLPackExporter(data), readonly=False)
    spec.view[8:16] = np.float64(-1.0).tobytes()
    assert data[1] == -1.0
    memory = weakref.ref(data)
    del data, exporter, spec
    assert memory() is None  # the writable array let go of the capsule (and the memory)


@pytest.mark.parametrize(
    ("device", "name"), [((2, 1), "CUDA:1"), ((10, 0), "ROCm:0"), ((99, 3), "type 99")]
)
def test_dlpack_device_memory_is_refused_naming_the_device(device, name):
    exporter = DLPackExporter(np.zeros(2), device=device)
    with pytest.raises(DeviceMemoryError, match=name) as info:
        parse_buffer(exporter)
    assert isinstance(info.value, BufferError) and isinstance(info.value, TypeError)
    assert exporter.calls == []  # refused before the memory is asked for


@pytest.mark.parametrize(
    ("device", "error"), [(None, TypeError), ((1, None), TypeError), ((1,), ValueError)]
)
def test_dlpack_device_answers_that_are_not_a_pair_of_ints_are_refused(device, error):
    exporter = DLPackExporter(np.zeros(2))
    exporter.device = device
    with pytest.raises(error):
        parse_buffer(exporter)


def test_dlpack_tensors_numpy_cannot_read_raise_buffer_error():
    class Consumed(DLPackExporter):
        def __dlpack__(self, **kwargs):
            capsule = self.array.__dlpack__(**kwargs)
            np.from_dlpack(_Capsule(capsule, self.device))  # now "used_dltensor_versioned"
            return capsule

    with pytest.raises(BufferError, match="DLPack export is unusable"):
        parse_buffer(Consumed(np.zeros(2)))


class _Capsule:
    """Hands out one capsule already made."""

    def __init__(self, capsule, device):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def test_dlpack_without_a_device_query_is_refused():
    class NoDevice:
        def __dlpack__(self, **kwargs):
            raise AssertionError("never called")

    with pytest.raises(TypeError, match="no __dlpack_device__"):
        parse_buffer(NoDevice())


@given(
    st.sampled_from(["i1", "u2", "i4", "i8", "f4", "f8", "c16", "?"]),
    st.integers(0, 40),
)
def test_dlpack_exports_of_every_basic_dtype_keep_type_and_bytes(code, length):
    data = np.arange(length).astype(code)
    spec = parse_buffer(DLPackExporter(data))
    assert spec.count == length
    assert spec.datatype.Get_size() == data.dtype.itemsize
    assert bytes(spec.view) == data.tobytes()


# -- CUDA array interface ----------------------------------------------------------------------


def test_cai_over_host_memory_is_a_writable_message():
    data = np.arange(5.0)
    spec = parse_buffer(CAIExporter(data), readonly=False)
    assert spec.datatype is mpi.DOUBLE and spec.count == 5
    spec.view[8:16] = np.float64(42.0).tobytes()
    assert data[1] == 42.0


def test_cai_read_only_flag_refuses_receives():
    data = np.arange(2.0)
    assert bytes(parse_buffer(CAIExporter(data, readonly=True)).view) == data.tobytes()
    with pytest.raises(ReadOnlyBufferError, match="marks the memory read-only"):
        parse_buffer(CAIExporter(data, readonly=True), readonly=False)


def test_cai_in_memory_the_process_may_not_write_is_read_only():
    with mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ) as region:
        heap = np.zeros(4)
        assert host_memory(heap.ctypes.data, heap.nbytes, writable=True) == ""
        pointer = np.frombuffer(region, dtype=np.uint8).ctypes.data
        assert "may not write" in host_memory(pointer, 8, writable=True)
        exporter = FakeDeviceExporter(pointer, 16)  # claims to be writable
        assert bytes(parse_buffer(exporter).view) == bytes(16)
        with pytest.raises(ReadOnlyBufferError, match="may not write"):
            parse_buffer(exporter, readonly=False)


def test_cai_device_pointers_are_refused(reserved):
    no_access = reserved
    with pytest.raises(DeviceMemoryError, match=f"{no_access:#x}.*may not read"):
        parse_buffer(FakeDeviceExporter(no_access))
    with pytest.raises(DeviceMemoryError, match="outside every mapping"):
        parse_buffer(FakeDeviceExporter(UNMAPPED), readonly=False)
    # A buffer that starts in host memory and runs off its end is no better.
    with pytest.raises(DeviceMemoryError, match="may not read"):
        parse_buffer(FakeDeviceExporter(no_access - 8, 24))


def test_cai_masks_are_refused_and_empty_buffers_need_no_pointer():
    class Masked(CAIExporter):
        @property
        def __cuda_array_interface__(self):
            return {**super().__cuda_array_interface__, "mask": object()}

    with pytest.raises(BufferError, match="mask"):
        parse_buffer(Masked(np.zeros(2)))
    spec = parse_buffer(FakeDeviceExporter(0, 0), readonly=False)
    assert spec.count == 0 and spec.nbytes == 0
    with pytest.raises(DeviceMemoryError, match="points at 0x0, outside every mapping"):
        parse_buffer(FakeDeviceExporter(None, 8))


def test_host_array_names_what_it_cannot_read():
    with pytest.raises(TypeError, match=r"expecting a buffer-like object.*not object"):
        host_array(object())


def cai_with(**fields):
    """A CAI exporter of 3 host doubles, with some fields replaced (None: deleted)."""
    array = np.arange(3.0)
    interface = {**CAIExporter(array).__cuda_array_interface__, **fields}
    interface = {key: value for key, value in interface.items() if value is not None}

    class Edited:
        __cuda_array_interface__ = interface
        memory = array

    return Edited()


@pytest.mark.parametrize(
    ("fields", "error", "text"),
    [
        ({"data": None}, KeyError, "lacks 'data'"),
        ({"shape": None}, KeyError, "lacks 'shape'"),
        ({"typestr": None}, KeyError, "lacks 'typestr'"),
        ({"data": 0}, TypeError, r"\['data'\] is int 0, not a tuple"),
        ({"shape": 3}, TypeError, r"\['shape'\] is int"),
        ({"typestr": 8}, TypeError, r"\['typestr'\] is int"),
        ({"strides": [8]}, TypeError, "not a tuple or None"),
        ({"descr": 42}, TypeError, "not a list or None"),
        ({"data": (0,)}, ValueError, "not \\(pointer, read_only\\)"),
        ({"typestr": "<fX"}, ValueError, "no item size"),
        ({"typestr": ">f8" if np.little_endian else "<f8"}, BufferError, "byte order"),
        ({"typestr": "#f8"}, BufferError, "has no byte order"),
        ({"shape": (3, -1)}, BufferError, "negative"),
        ({"strides": (8, 8)}, BufferError, "do not fit its shape"),
        ({"strides": (-8,)}, BufferError, "non-negative"),
        ({"mask": True}, BufferError, "mask"),
    ],
)
def test_malformed_cuda_array_interfaces_raise_what_mpi4py_raises(fields, error, text):
    with pytest.raises(error, match=text):
        parse_buffer(cai_with(**fields))


def test_cai_descr_that_disagrees_warns_and_unknown_item_kinds_travel_as_bytes():
    exporter = cai_with(descr=[("", "<f8")], typestr="|V8")
    with pytest.warns(RuntimeWarning, match="descr.*is ignored"):
        spec = parse_buffer(exporter)
    assert spec.nbytes == 24 and bytes(spec.view) == exporter.memory.tobytes()
    spec = parse_buffer(cai_with(typestr="|f8", strides=(8,)), readonly=False)  # no warning
    assert spec.datatype is mpi.DOUBLE and spec.count == 3


# -- no exporter outlives its operation --------------------------------------------------------


def exporters_of(kind: str, array: np.ndarray):
    """The exporter of ``array`` of one kind, and what keeps its memory alive."""
    if kind == "buffer":
        return array, array
    if kind == "dlpack":
        return DLPackExporter(array), array
    if kind == "legacy-dlpack":
        return LegacyDLPackExporter(array), array
    return CAIExporter(array), array


KINDS = ["buffer", "dlpack", "legacy-dlpack", "cai"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_blocking_call_keeps_no_reference(kind):
    world = make_world(2)

    def body(comm):
        array = np.full(4, float(comm.rank))
        exporter, memory = exporters_of(kind, array)
        refs = [weakref.ref(exporter), weakref.ref(memory)]
        if comm.rank == 0:
            comm.Send(exporter, 1, 3)
        else:
            comm.Recv(exporter, 0, 3)
        del exporter, memory, array
        return [ref() is None for ref in refs]

    assert run_ranks(world, body) == [[True, True], [True, True]]


@pytest.mark.parametrize("kind", KINDS)
def test_a_request_holds_its_exporters_until_it_completes(kind):
    world = make_world(2)

    def body(comm):
        array = np.full(1000, float(comm.rank))
        exporter, memory = exporters_of(kind, array)
        ref = weakref.ref(memory)
        if comm.rank == 0:
            comm.Barrier()
            request = comm.Isend(exporter, 1, 5)
        else:
            request = comm.Irecv(exporter, 0, 5)
            del exporter, memory, array
            gc.collect()
            alive_while_pending = ref() is not None  # the pending receive needs the memory
            comm.Barrier()
        if comm.rank == 0:
            del exporter, memory, array
            alive_while_pending = True
        request.Wait()
        return alive_while_pending, ref() is None

    assert run_ranks(world, body) == [(True, True), (True, True)]


@pytest.mark.parametrize("kind", KINDS)
def test_persistent_requests_keep_their_exporter_until_freed(kind):
    world = make_world(2)

    def body(comm):
        array = np.zeros(8)
        exporter, memory = exporters_of(kind, array)
        ref = weakref.ref(memory)
        if comm.rank == 0:
            request = comm.Send_init(exporter, 1, 6)
        else:
            request = comm.Recv_init(exporter, 0, 6)
        del exporter, memory, array
        for _ in range(2):
            request.Start()
            request.Wait()
        kept = ref() is not None
        request.Free()
        return kept, ref() is None

    assert run_ranks(world, body) == [(True, True), (True, True)]


def _bsend(comm, exporter):
    if comm.rank == 0:
        comm.Attach_buffer(bytearray(1 << 16))
        request = comm.Ibsend(exporter, 1, 7)
        comm.Bsend(exporter, 1, 8)
        request.Wait()
        comm.Detach_buffer()
    else:
        comm.Recv(exporter, 0, 7)
        comm.Recv(exporter, 0, 8)


def _matched(comm, exporter):
    if comm.rank == 0:
        comm.Send(exporter, 1, 9)
        comm.Send(exporter, 1, 9)
    else:
        comm.Mprobe(0, 9).Recv(exporter)
        comm.Mprobe(0, 9).Irecv(exporter).Wait()


OTHER_CALLS = {
    "Bcast": lambda comm, x: comm.Bcast(x, 0),
    "Ibcast": lambda comm, x: comm.Ibcast(x, 0).Wait(),
    "Allreduce into": lambda comm, x: comm.Allreduce(np.ones(8), x),
    "Iallreduce from": lambda comm, x: comm.Iallreduce(x, np.zeros(8)).Wait(),
    "Iallgather": lambda comm, x: comm.Iallgather(x, np.zeros(16)).Wait(),
    "Sendrecv_replace": lambda comm, x: comm.Sendrecv_replace(x, 1 - comm.rank, 4),
    "Bsend and Ibsend": _bsend,
    "Mrecv and Imrecv": _matched,
}


@pytest.mark.parametrize("call", list(OTHER_CALLS))
@pytest.mark.parametrize("kind", KINDS)
def test_collectives_buffered_and_matched_calls_keep_no_reference(kind, call):
    world = make_world(2)

    def body(comm):
        array = np.full(8, float(comm.rank))
        exporter, memory = exporters_of(kind, array)
        refs = [weakref.ref(exporter), weakref.ref(memory)]
        OTHER_CALLS[call](comm, exporter)
        del exporter, memory, array
        return [ref() is None for ref in refs]

    assert run_ranks(world, body) == [[True, True], [True, True]]


def test_a_sendrecv_whose_send_buffer_is_refused_posts_no_receive():
    world = make_world(2)

    def body(comm):
        into = np.zeros(3)
        exporter = CAIExporter(into)
        ref = weakref.ref(exporter)
        if comm.rank == 0:
            with pytest.raises(DeviceMemoryError):
                comm.Sendrecv(FakeDeviceExporter(None, 24), 1, 1, exporter, 1, 1)
            del exporter
            released = ref() is None  # no receive was left posted with it
            comm.Barrier()
            comm.Recv(into, 1, 1)  # the message goes to this receive, not to a stale one
            return released, into.tolist()
        comm.Barrier()
        comm.Send(np.arange(3.0), 0, 1)
        return None

    assert run_ranks(world, body)[0] == (True, [0.0, 1.0, 2.0])


@pytest.mark.parametrize("kind", KINDS)
def test_strided_exports_and_derived_datatypes_travel_and_are_released(kind):
    world = make_world(2)

    def body(comm):
        vector = mpi.DOUBLE.Create_vector(5, 1, 2).Commit()
        array = np.arange(10.0) + 100 * comm.rank
        strided = exporters_of(kind, array[1::2])[0]  # every other element: a strided export
        whole = exporters_of(kind, array)[0]
        refs = [weakref.ref(strided), weakref.ref(whole), weakref.ref(array)]
        if comm.rank == 0:
            comm.Send(strided, 1, 1)
            comm.Isend([whole, 1, vector], 1, 2).Wait()
            result = None
        else:
            comm.Recv(strided, 0, 1)  # odd elements <- rank 0's odd elements
            comm.Irecv([whole, 1, vector], 0, 2).Wait()  # even elements <- rank 0's even
            result = array.tolist()
        vector.Free()
        del strided, whole, array
        return result, [ref() is None for ref in refs]

    sent, received = run_ranks(world, body)
    assert sent[1] == received[1] == [True, True, True]
    assert received[0] == np.arange(10.0).tolist()
