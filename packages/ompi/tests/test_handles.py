"""Handles: predefined singletons, pickling, integers, subclasses, free(), special addresses."""

import copy
import gc
import operator
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi import constants
from ompy.ompi.api import rc
from ompy.ompi.api.testing import default_instance, make_world
from ompy.ompi.handle import FIRST_USER_HANDLE, Handle
from ompy.ompi.instance import adopted

rc.initialize = False  # these tests build loopback processes instead of a launched one
from ompy import MPI  # noqa: E402

#: Every predefined handle class and its predefined objects, by name in ``MPI``.
CLASSES = (
    MPI.Comm,
    MPI.Datatype,
    MPI.Group,
    MPI.Op,
    MPI.Request,
    MPI.Message,
    MPI.Session,
    MPI.Info,
    MPI.Errhandler,
)
PREDEFINED = [
    (name, handle)
    for cls in CLASSES
    for name, handle, _ in cls._predefined  # type: ignore[attr-defined]
]
PROTOCOLS = range(pickle.HIGHEST_PROTOCOL + 1)


@pytest.fixture
def world():
    (world,) = make_world(1)
    with adopted(world._c.instance):
        yield world


def test_every_predefined_object_is_registered_under_its_mpi_name():
    names = {name for name, _ in PREDEFINED}
    for name in ("COMM_WORLD", "COMM_SELF", "COMM_NULL", "INT", "DOUBLE", "DATATYPE_NULL"):
        assert name in names
    for name in ("SUM", "OP_NULL", "GROUP_EMPTY", "REQUEST_NULL", "MESSAGE_NO_PROC"):
        assert name in names
    for name in ("INFO_NULL", "INFO_ENV", "ERRHANDLER_NULL", "ERRORS_RETURN", "ERRORS_ABORT"):
        assert name in names
    for name, handle in PREDEFINED:
        assert getattr(MPI, name) is handle, name


@given(st.sampled_from(PREDEFINED), st.sampled_from(PROTOCOLS))
def test_predefined_objects_pickle_and_copy_to_themselves(named, protocol):
    _, handle = named
    assert pickle.loads(pickle.dumps(handle, protocol)) is handle
    assert copy.copy(handle) is handle
    assert copy.deepcopy(handle) is handle


@given(st.sampled_from(PREDEFINED), st.sampled_from(PROTOCOLS))
def test_other_handles_to_predefined_objects_pickle_to_new_handles_of_their_class(named, protocol):
    _, handle = named
    other = type(handle)(handle)
    back = pickle.loads(pickle.dumps(other, protocol))
    assert type(back) is type(handle) and back is not handle and back == handle
    assert copy.copy(other) == handle


class MyComm(MPI.Intracomm):
    pass


class MyDatatype(MPI.Datatype):
    pass


def test_subclass_handles_to_predefined_objects_keep_their_class_through_pickle():
    for handle in (MyComm(MPI.COMM_WORLD), MyComm(), MyDatatype(MPI.INT)):
        back = pickle.loads(pickle.dumps(handle))
        assert type(back) is type(handle) and back == handle


def test_user_objects_cannot_travel(world):
    dup = world.Dup()
    group = world.Get_group()
    request = world.Irecv(bytearray(1), 0, 5)
    for handle in (dup, group, request):
        kind = type(handle)
        with pytest.raises(ValueError, match=f"cannot serialize '.*{kind.__name__}' instance"):
            pickle.dumps(handle)
    world.Send(b"x", 0, 5)
    request.Wait()
    assert pickle.loads(pickle.dumps(request)) == MPI.REQUEST_NULL  # complete: a null handle
    dup.Free()


# -- construction and subclasses -------------------------------------------------------------------


class CloningComm(MPI.Intracomm):
    """mpi4py's test_subclass pattern: ``__new__`` picks what the handle refers to."""

    def __new__(cls, comm=None):
        if comm is not None and comm != MPI.COMM_NULL:
            comm = comm.Dup()
        return super().__new__(cls, comm)


def test_a_subclass_new_chooses_the_object_and_init_does_not_undo_it(world):
    mine = CloningComm(world)
    assert type(mine) is CloningComm and mine != world
    assert mine.Compare(world) == MPI.CONGRUENT
    clone = mine.Clone()  # Dup and Clone keep the subclass
    assert type(clone) is CloningComm
    same = MPI.Intracomm.__new__(CloningComm, world)  # the base __new__ does not clone
    assert same == world and type(same) is CloningComm
    clone.Free()
    mine.Free()
    assert not CloningComm() and type(CloningComm()) is CloningComm


def test_constructors_take_a_handle_of_their_own_kind_only():
    for cls in CLASSES:
        with pytest.raises(TypeError, match="to refer to"):
            cls(1234)
        with pytest.raises(TypeError, match="to refer to"):
            cls("abc")
    with pytest.raises(TypeError, match="Comm"):
        MPI.Comm(MPI.INT)
    prequest = MPI.Prequest(MPI.REQUEST_NULL)
    assert type(prequest) is MPI.Prequest and not prequest and prequest == MPI.REQUEST_NULL


def test_equal_handles_hash_equal_and_nulls_differ_across_kinds(world):
    dup = world.Dup()
    assert MPI.Comm(dup) == dup and hash(MPI.Comm(dup)) == hash(dup)
    assert len({dup, MPI.Intracomm(dup), world, MPI.Comm(world)}) == 2
    assert MPI.COMM_NULL != MPI.DATATYPE_NULL
    assert MPI.COMM_NULL != MPI.GROUP_NULL
    assert (MPI.COMM_NULL == 12345) is False
    with pytest.raises(TypeError):
        operator.lt(dup, world)
    dup.Free()


# -- integer handles -------------------------------------------------------------------------------


@given(st.sampled_from(PREDEFINED))
def test_predefined_integers_are_small_fixed_and_round_trip(named):
    name, handle = named
    number = handle.handle
    assert 0 <= number < FIRST_USER_HANDLE
    assert handle.toint() == handle.py2f() == number
    cls = type(handle)
    for back in (cls.fromhandle(number), cls.fromint(number), cls.f2py(number)):
        assert back == handle and type(back) is cls, name


def test_open_mpi_fortran_numbers_of_the_predefined_communicators():
    assert (MPI.COMM_WORLD.py2f(), MPI.COMM_SELF.py2f(), MPI.COMM_NULL.py2f()) == (0, 1, 2)
    assert MPI.DATATYPE_NULL.toint() == 0 and MPI.GROUP_EMPTY.toint() == 1
    assert MPI.SUM.py2f() == 3
    assert (MPI.INFO_NULL.toint(), MPI.INFO_ENV.toint()) == (0, 1)
    numbers = [MPI.ERRHANDLER_NULL, MPI.ERRORS_ARE_FATAL, MPI.ERRORS_RETURN, MPI.ERRORS_ABORT]
    assert [handler.py2f() for handler in numbers] == [0, 1, 2, 3]


@given(st.integers(1, 20))
def test_user_objects_get_integers_that_round_trip_while_they_live(count):
    with default_instance() as instance:
        (world,) = make_world(1)
        comms = [world.Dup() for _ in range(count)]
        types = [MPI.DOUBLE.Dup() for _ in range(count)]
        numbers = [handle.toint() for handle in comms + types]
        assert len(set(numbers)) == len(numbers) and min(numbers) >= FIRST_USER_HANDLE
        for handle, number in zip(comms + types, numbers, strict=True):
            assert type(handle).fromint(number) == handle
            assert type(handle)(handle).handle == number  # another handle, the same integer
        assert MPI.Comm.fromint(numbers[0]).__class__ is MPI.Intracomm
        with pytest.raises(ValueError, match="no Datatype has handle"):
            MPI.Datatype.fromint(numbers[0])  # a communicator's number
        for comm in comms:
            comm.Free()
        del comms, types, handle
        gc.collect()
        assert len(instance.handles) == 0  # the table only knows live objects


def test_request_integers_follow_a_handle(world):
    request = world.Irecv(bytearray(1), 0, 9)
    number = request.toint()
    assert MPI.Request.fromint(number) == request
    world.Send(b"y", 0, 9)
    request.Wait()
    assert request.toint() == MPI.REQUEST_NULL.toint()


def test_unknown_integers_and_bad_types_are_refused(world):
    with pytest.raises(ValueError, match="no Comm has handle 999"):
        MPI.Comm.f2py(999)
    with pytest.raises(ValueError, match="no Group has handle"):
        MPI.Group.fromhandle(FIRST_USER_HANDLE + 10_000)
    with pytest.raises(TypeError, match="handle is an int"):
        MPI.Comm.fromint("0")
    with pytest.raises(AttributeError):
        MPI.COMM_WORLD.handle = 3


def test_handles_are_weakly_referenceable():
    import weakref

    for _, handle in PREDEFINED:
        assert weakref.ref(handle)() is handle


# -- free() --------------------------------------------------------------------------------------


def test_free_leaves_predefined_objects_and_nulls_other_handles_to_them():
    predefined = (MPI.INT, MPI.SUM, MPI.GROUP_EMPTY, MPI.MESSAGE_NO_PROC, MPI.COMM_NULL)
    for handle in (*predefined, MPI.INFO_ENV, MPI.ERRORS_RETURN, MPI.ERRHANDLER_NULL):
        before = bool(handle)
        handle.free()
        assert bool(handle) is before
        other = type(handle)(handle)
        other.free()
        other.free()
        assert not other
    assert MPI.INT.Get_size() == 4
    assert MPI.INFO_ENV.Get("host") and MPI.ERRORS_RETURN


def test_free_frees_user_objects_once(world):
    dup, datatype, op = world.Dup(), MPI.INT.Dup(), MPI.Op.Create(lambda a, b, t: b)
    group = world.Get_group()
    request = world.Isend(b"", MPI.PROC_NULL, 0)
    info, handler = MPI.Info.Create({"a": "1"}), MPI.Comm.Create_errhandler(lambda c, e: None)
    for handle in (dup, datatype, op, group, request, info, handler):
        for _ in range(3):
            handle.free()
            assert not handle


# -- special addresses ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "address"),
    [
        ("BOTTOM", MPI.BottomType, 0),
        ("IN_PLACE", MPI.InPlaceType, 1),
        ("BUFFER_AUTOMATIC", MPI.BufferAutomaticType, 2),
    ],
)
def test_special_addresses_behave_as_mpi4py_constants(name, kind, address):
    constant = getattr(MPI, name)
    assert type(constant) is kind and kind() is constant
    assert repr(constant) == name and constant.__reduce__() == name
    assert constant == address and hash(constant) == hash(address)
    assert int(constant) == operator.index(constant) == address
    assert bool(constant) is bool(address)
    assert constant != None  # noqa: E711
    with pytest.raises(TypeError):
        constant + 1
    for protocol in PROTOCOLS:
        assert pickle.loads(pickle.dumps(constant, protocol)) is constant
    assert copy.deepcopy(constant) is constant
    assert not isinstance(constant, int)
    assert MPI.Get_address(constant) == constant


def test_handle_base_is_what_every_handle_class_inherits():
    for cls in CLASSES:
        assert issubclass(cls, Handle)
    assert constants.IN_PLACE is MPI.IN_PLACE
