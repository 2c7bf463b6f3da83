"""Pack/Unpack (native and external32), specified against an independent typemap model.

Hypothesis builds random nested datatypes (contiguous, vector, hvector, indexed, hindexed,
indexed_block, hindexed_block, struct, resized, dup) over a few predefined types, together with
a plain-Python model of the typemap MPI defines for them: the list of basic elements (byte
displacement, size) in typemap order, and the bounds with MPI's explicit-marker rule.  What
Pack writes must be those bytes gathered by numpy fancy indexing; Unpack must scatter them
back; decode, pickling and Get_elements must agree with the same model.
"""

import pickle

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.ompi import errors
from ompy.ompi.api.testing import make_world
from ompy.ompi.datatype import Datatype
from ompy.ompi.datatype import predefined as mpi
from ompy.ompi.status import Status


@attrs.frozen
class Model:
    """A typemap as MPI defines it: basic elements ``(displacement, size)`` and the bounds."""

    entries: tuple[tuple[int, int], ...]
    lb: int
    ub: int
    explicit_lb: bool = False
    explicit_ub: bool = False

    @property
    def extent(self) -> int:
        return self.ub - self.lb

    @property
    def align(self) -> int:
        """The strictest alignment of its basic elements (every basic of the leaves is
        aligned to its size): a struct's extent is padded to a multiple of it."""
        return max((n for _, n in self.entries), default=1)

    @property
    def size(self) -> int:
        return sum(n for _, n in self.entries)


def leaf(datatype, *basics):
    entries, at = [], 0
    for offset, size in basics:
        entries.append((offset, size))
        at = max(at, offset + size)
    return datatype, Model(tuple(entries), 0, datatype.extent)


LEAVES = [
    leaf(mpi.BYTE, (0, 1)),
    leaf(mpi.SHORT, (0, 2)),
    leaf(mpi.INT, (0, 4)),
    leaf(mpi.FLOAT, (0, 4)),
    leaf(mpi.DOUBLE, (0, 8)),
    leaf(mpi.DOUBLE_INT, (0, 8), (8, 4)),  # padded: extent 16
]
LONG_DOUBLE = leaf(mpi.LONG_DOUBLE, (0, mpi.LONG_DOUBLE.size))


def build(parts):
    """The model of copies of parts: ``parts = [(model, [offset, ...]), ...]`` in order."""
    entries, lbs, ubs, explicit_lbs, explicit_ubs = [], [], [], [], []
    for model, offsets in parts:
        for offset in offsets:
            entries.extend((offset + d, n) for d, n in model.entries)
            if model.explicit_lb:
                explicit_lbs.append(offset + model.lb)
            if model.explicit_ub:
                explicit_ubs.append(offset + model.ub)
            if model.entries or model.explicit_lb or model.explicit_ub:
                lbs.append(offset + model.lb)
                ubs.append(offset + model.ub)
    lb = min(explicit_lbs) if explicit_lbs else min(lbs, default=0)
    ub = max(explicit_ubs) if explicit_ubs else max(ubs, default=0)
    made = Model(tuple(entries), lb, ub, bool(explicit_lbs), bool(explicit_ubs))
    if made.explicit_ub:
        return made
    return attrs.evolve(made, ub=ub + (-made.extent % made.align))  # MPI's epsilon


def blocks(model, lengths, starts):
    """Blocks of ``lengths[i]`` copies of ``model`` from byte ``starts[i]``, one extent apart."""
    offsets = [s + j * model.extent for s, n in zip(starts, lengths, strict=True) for j in range(n)]
    return build([(model, offsets)])


# Listed with the interesting values first: hypothesis favours (and shrinks towards) those.
small = st.sampled_from([2, 3, 1, 0])
lengths = st.lists(small, min_size=0, max_size=3)


@st.composite
def derived(draw, leaves=LEAVES, depth=3):
    """A (datatype, model) pair, nested up to ``depth`` constructors deep."""
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(leaves))
    old, model = draw(derived(leaves, depth - 1))
    kind = draw(
        st.sampled_from(
            ["vector", "struct", "hindexed", "resized", "indexed_block", "hvector", "indexed",
             "hindexed_block", "contiguous", "dup"]
        )
    )  # fmt: skip
    extent = model.extent
    if kind == "contiguous":
        count = draw(small)
        return old.Create_contiguous(count), blocks(model, [count], [0])
    if kind in ("vector", "hvector"):
        count, blocklength = draw(small), draw(small)
        strides = [3, 2, 4, 1, 0] if kind == "vector" else [24, 40, 8, 13, 0, 4]
        stride = draw(st.sampled_from(strides))
        step = stride * extent if kind == "vector" else stride
        made = getattr(old, f"Create_{kind}")(count, blocklength, stride)
        return made, blocks(model, [blocklength] * count, [i * step for i in range(count)])
    if kind in ("indexed", "hindexed"):
        lens = draw(lengths)
        displs = draw(st.lists(st.integers(0, 40), min_size=len(lens), max_size=len(lens)))
        scale = extent if kind == "indexed" else 1
        made = getattr(old, f"Create_{kind}")(lens, displs)
        return made, blocks(model, lens, [d * scale for d in displs])
    if kind in ("indexed_block", "hindexed_block"):
        blocklength = draw(small)
        displs = draw(st.lists(st.integers(0, 40), max_size=3))
        scale = extent if kind == "indexed_block" else 1
        made = getattr(old, f"Create_{kind}")(blocklength, displs)
        return made, blocks(model, [blocklength] * len(displs), [d * scale for d in displs])
    if kind == "struct":
        other, other_model = draw(derived(leaves, depth - 1))
        lens = [draw(small), draw(small)]
        displs = [draw(st.integers(0, 40)), draw(st.integers(0, 40))]
        made = Datatype.Create_struct(lens, displs, [old, other])
        parts = [
            (m, [d + j * m.extent for j in range(n)])
            for m, n, d in zip((model, other_model), lens, displs, strict=True)
        ]
        return made, build(parts)
    if kind == "resized":
        lb, new_extent = draw(st.integers(0, 8)), draw(st.integers(0, 48))
        resized = Model(model.entries, lb, lb + new_extent, True, True)
        return old.Create_resized(lb, new_extent), resized
    return old.Dup(), model


def top(pair):
    """The type resized so whole elements hold all their data: ``count`` of them fill
    ``count * extent`` bytes from byte 0 (what Pack's buffer argument needs)."""
    datatype, model = pair
    true_ub = max((d + n for d, n in model.entries), default=0)
    extent = max(model.ub, true_ub, 1)
    made = datatype.Create_resized(0, extent).Commit()
    return made, Model(model.entries, 0, extent, True, True)


def gather_index(model, count):
    """Byte indices of the packed stream of ``count`` elements, in order."""
    pieces = [
        np.arange(i * model.extent + d, i * model.extent + d + n)
        for i in range(count)
        for d, n in model.entries
    ]
    return np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)


@pytest.fixture(scope="module")
def comm():
    (world,) = make_world(1)
    return world


def random_bytes(seed, n):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(derived(), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_sizes_and_bounds_match_the_model(comm, pair, count, seed):
    datatype, model = pair
    assert datatype.Get_size() == model.size
    assert datatype.Get_extent() == (model.lb, model.extent)
    if model.entries:
        true_lb = min(d for d, _ in model.entries)
        true_ub = max(d + n for d, n in model.entries)
        assert datatype.Get_true_extent() == (true_lb, true_ub - true_lb)
    assert datatype.Pack_size(count, comm) == count * model.size


@SETTINGS
@given(derived(), st.integers(0, 3), st.integers(0, 7), st.integers(0, 2**32 - 1))
def test_pack_gathers_the_typemap_bytes_and_unpack_scatters_them(comm, pair, count, at, seed):
    datatype, model = top(pair)
    data = random_bytes(seed, count * model.extent)
    index = gather_index(model, count)
    expected = data[index].tobytes()
    out = bytearray(at + len(expected) + 3)
    assert datatype.Pack(data, out, at, comm) == at + len(expected)
    assert bytes(out[at : at + len(expected)]) == expected
    assert bytes(out[:at]) == bytes(at) and bytes(out[at + len(expected) :]) == bytes(3)

    target = np.zeros_like(data)
    covered = np.bincount(index, minlength=len(data)) if len(index) else np.zeros(len(data), int)
    if (covered > 1).any():
        with pytest.raises(MPI.Exception) as info:
            datatype.Unpack(out, at, target, comm)
        assert info.value.Get_error_class() == errors.ERR_TYPE
        return
    assert datatype.Unpack(out, at, target, comm) == at + len(expected)
    assert np.array_equal(target[index], data[index])
    assert not target[covered == 0].any()  # bytes outside the typemap are left alone


@SETTINGS
@given(derived(leaves=[*LEAVES, LONG_DOUBLE]), st.integers(0, 2**32 - 1))
def test_decode_and_pickle_make_the_same_datatype_again(comm, pair, seed):
    datatype, model = pair
    rebuilt = []
    base, combiner, params = datatype.decode()
    if combiner != "NAMED":
        rebuilt.append(getattr(base, f"Create_{combiner.lower()}")(**params))
    rebuilt.append(pickle.loads(pickle.dumps(datatype)))
    for again in rebuilt:
        assert again.Get_envelope() == datatype.Get_envelope()
        if not datatype.is_named:
            assert again.Get_contents()[:3] == datatype.Get_contents()[:3]
        assert (again.Get_extent(), again.Get_size()) == (
            datatype.Get_extent(),
            datatype.Get_size(),
        )
        made, top_model = top((again, model))
        original, _ = top((datatype, model))
        data = random_bytes(seed, 2 * top_model.extent)
        ours, theirs = bytearray(2 * model.size), bytearray(2 * model.size)
        original.Pack(data, ours, 0, comm)
        made.Pack(data, theirs, 0, comm)
        assert ours == theirs


@SETTINGS
@given(derived(), st.integers(0, 4))
def test_the_overlap_check_agrees_with_the_model(pair, count):
    datatype, model = pair
    covered = {}
    for i in range(count):
        for d, n in model.entries:
            for byte in range(i * model.extent + d, i * model.extent + d + n):
                covered[byte] = covered.get(byte, 0) + 1
    assert datatype.layout.overlaps(count) is any(times > 1 for times in covered.values())


@SETTINGS
@given(derived(), st.integers(1, 3), st.data())
def test_get_elements_counts_whole_basic_elements(pair, count, data):
    datatype, model = pair
    sizes = [n for _, n in model.entries] * count
    nbytes = data.draw(st.integers(0, sum(sizes)))
    status = Status()
    status.Set_elements(mpi.BYTE, nbytes)
    ends = np.cumsum([0, *sizes])
    whole = int(np.searchsorted(ends, nbytes, side="right")) - 1
    expected = whole if ends[whole] == nbytes else MPI.UNDEFINED
    assert status.Get_elements(datatype) == expected
    if sizes:
        elements = data.draw(st.integers(0, len(sizes)))
        status.Set_elements(datatype, elements)
        assert status.Get_elements(datatype) == elements
        assert status.Get_elements(mpi.BYTE) == int(ends[elements])


@SETTINGS
@given(derived(), st.integers(0, 3), st.integers(0, 2**32 - 1))
def test_external32_round_trips(comm, pair, count, seed):
    datatype, model = top(pair)
    data = random_bytes(seed, count * model.extent)
    size = datatype.Pack_external_size("external32", count)
    assert size == count * model.size  # these types have the same sizes in external32
    out = bytearray(size)
    assert datatype.Pack_external("external32", data, out, 0) == size
    index = gather_index(model, count)
    covered = np.bincount(index, minlength=len(data)) if len(index) else np.zeros(len(data), int)
    if (covered > 1).any():
        return
    target = np.zeros_like(data)
    assert datatype.Unpack_external("external32", out, 0, target) == size
    assert np.array_equal(target[index], data[index])


def test_external32_is_big_endian(comm):
    values = np.array([1, -2, 0x01020304], dtype=np.int32)
    column = mpi.INT.Create_vector(2, 1, 2).Commit()
    out = bytearray(column.Pack_external_size("external32", 1))
    assert len(out) == 8
    column.Pack_external("external32", values, out, 0)
    assert bytes(out) == values[[0, 2]].astype(">i4").tobytes()
    doubles = np.array([1.5, -0.25])
    out = bytearray(16)
    mpi.DOUBLE.Pack_external("external32", doubles, out, 0)
    assert bytes(out) == doubles.astype(">f8").tobytes()
    back = np.zeros(2)
    assert mpi.DOUBLE.Unpack_external("external32", out, 0, back) == 16
    assert back.tolist() == [1.5, -0.25]
    # long double travels as a 16-byte IEEE quad; a double-precision value comes back exactly
    longs = np.array([3.25, -1e300], dtype=np.longdouble)
    out = bytearray(mpi.LONG_DOUBLE.Pack_external_size("external32", 2))
    mpi.LONG_DOUBLE.Pack_external("external32", longs, out, 0)
    back_long = np.zeros(2, dtype=np.longdouble)
    mpi.LONG_DOUBLE.Unpack_external("external32", out, 0, back_long)
    assert back_long.tolist() == longs.tolist()


# -- errors ---------------------------------------------------------------------------------------


def error_class(call, *args):
    with pytest.raises(MPI.Exception) as info:
        call(*args)
    return info.value.Get_error_class(), str(info.value)


def test_packing_needs_a_committed_datatype(comm):
    vector = mpi.INT.Create_vector(2, 1, 2)
    klass, message = error_class(vector.Pack, np.zeros(4, np.int32), bytearray(8), 0, comm)
    assert klass == errors.ERR_TYPE and "not committed" in message and "Pack" in message
    vector.Commit()
    assert vector.Pack(np.arange(3, dtype=np.int32), bytearray(8), 0, comm) == 8


def test_running_out_of_room_or_data_is_a_truncation(comm):
    klass, message = error_class(mpi.INT.Pack, np.zeros(4, np.int32), bytearray(12), 0, comm)
    assert klass == errors.ERR_TRUNCATE and "16 bytes to pack but only 12" in message
    klass, _ = error_class(mpi.INT.Unpack, bytearray(12), 4, np.zeros(3, np.int32), comm)
    assert klass == errors.ERR_TRUNCATE
    klass, _ = error_class(mpi.INT.Pack, np.zeros(1, np.int32), bytearray(4), 5, comm)
    assert klass == errors.ERR_ARG


def test_bad_arguments(comm):
    with pytest.raises(BufferError, match="outbuf"):
        mpi.INT.Pack(np.zeros(1, np.int32), b"1234", 0, comm)
    with pytest.raises(TypeError, match="comm must be a Comm"):
        mpi.INT.Pack(np.zeros(1, np.int32), bytearray(4), 0, None)
    assert error_class(mpi.INT.Pack_size, 1, MPI.COMM_NULL)[0] == errors.ERR_COMM
    assert error_class(mpi.INT.Pack_size, -1, comm)[0] == errors.ERR_COUNT
    klass, message = error_class(mpi.INT.Pack_external_size, "native", 1)
    assert klass == errors.ERR_UNSUPPORTED_DATAREP and "'native'" in message
    klass, _ = error_class(mpi.INT.Unpack_external, "internal", b"", 0, np.zeros(0, np.int32))
    assert klass == errors.ERR_UNSUPPORTED_DATAREP


def test_packed_data_travels_as_mpi_packed(comm):
    """What Pack writes is sent as MPI.PACKED and unpacked by the receiver."""
    matrix = np.arange(12, dtype=np.float64).reshape(3, 4)
    column = mpi.DOUBLE.Create_vector(3, 1, 4).Create_resized(0, matrix.nbytes).Commit()
    buffer = bytearray(column.Pack_size(1, comm) + mpi.INT.Pack_size(1, comm))
    position = column.Pack(matrix, buffer, 0, comm)
    position = mpi.INT.Pack(np.array([7], np.int32), buffer, position, comm)
    received = bytearray(len(buffer))
    request = comm.Irecv([received, MPI.PACKED], 0, 5)
    comm.Send([buffer, position, MPI.PACKED], 0, 5)
    request.Wait()
    out = np.zeros_like(matrix)
    number = np.zeros(1, np.int32)
    position = column.Unpack(received, 0, out, comm)
    mpi.INT.Unpack(received, position, number, comm)
    assert out[:, 0].tolist() == [0.0, 4.0, 8.0] and number[0] == 7
