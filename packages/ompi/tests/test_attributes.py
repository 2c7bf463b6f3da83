"""Attribute caching on communicators and datatypes: keyvals, callbacks, predefined attributes."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.api import rc
from ompy.ompi.api.comm import Comm, Intracomm
from ompy.ompi.api.testing import (
    default_instance,
    interpreter_world,
    make_world,
    no_default_instance,
    run_ranks,
)
from ompy.ompi.attributes import FIRST_USER_KEYVAL
from ompy.ompi.constants import (
    ANY_SOURCE,
    APPNUM,
    HOST,
    IO,
    KEYVAL_INVALID,
    LASTUSEDCODE,
    PROC_NULL,
    TAG_UB,
    TAG_UB_VALUE,
    UNIVERSE_SIZE,
    WTIME_IS_GLOBAL,
)
from ompy.ompi.datatype import BY_KEY, Datatype
from ompy.ompi.instance import adopted

rc.initialize = False  # these tests build loopback processes instead of a launched one
from ompy import MPI  # noqa: E402

PREDEFINED = (TAG_UB, HOST, IO, WTIME_IS_GLOBAL, APPNUM, UNIVERSE_SIZE, LASTUSEDCODE)


def error_class(call, *args):
    with pytest.raises(errors.Exception) as info:
        call(*args)
    return info.value.Get_error_class()


@pytest.fixture
def world():
    """A one-rank loopback world whose instance is the interpreter's default (keyvals live
    on the process's instance)."""
    (world,) = make_world(1)
    with adopted(world._c.instance):
        yield world


@pytest.fixture
def comm(world):
    comm = world.Dup()
    yield comm
    if comm:
        comm.Free()


# -- predefined attributes -------------------------------------------------------------------------


def test_world_has_the_predefined_attributes_with_open_mpi_values_and_int_types():
    (world,) = make_world(3)[:1]
    values = {keyval: world.Get_attr(keyval) for keyval in PREDEFINED}
    assert values == {
        TAG_UB: TAG_UB_VALUE,
        HOST: PROC_NULL,
        IO: ANY_SOURCE,
        WTIME_IS_GLOBAL: 0,
        APPNUM: 0,
        UNIVERSE_SIZE: 3,
        LASTUSEDCODE: errors.ERR_LASTCODE,
    }
    assert all(type(value) is int for value in values.values())


def test_lastusedcode_is_read_live_and_only_world_has_it(world):
    codes = world._c.instance.error_codes  # the table MPI.Add_error_class/_code add to
    codes.add_code(codes.add_class(), "test")
    assert world.Get_attr(LASTUSEDCODE) == errors.ERR_LASTCODE + 2
    dup = world.Dup()
    try:
        assert dup.Get_attr(LASTUSEDCODE) is None  # Open MPI: MPI_COMM_NULL_COPY_FN
        assert dup.Get_attr(TAG_UB) == TAG_UB_VALUE  # the others are inherited
        assert dup.Dup().Get_attr(UNIVERSE_SIZE) == 1
    finally:
        dup.Free()


def test_split_and_create_do_not_inherit_attributes(world):
    split = world.Split(0, 0)
    created = world.Create(world.Get_group())
    try:
        assert [split.Get_attr(k) for k in PREDEFINED] == [None] * len(PREDEFINED)
        assert created.Get_attr(TAG_UB) is None
    finally:
        split.Free()
        created.Free()


def test_predefined_keyvals_cannot_be_set_deleted_or_freed(world):
    for call in (
        lambda: world.Set_attr(TAG_UB, 5),
        lambda: world.Delete_attr(IO),
        lambda: Comm.Free_keyval(APPNUM),
    ):
        assert error_class(call) == errors.ERR_KEYVAL
    assert world.Get_attr(TAG_UB) == TAG_UB_VALUE


def test_without_an_instance_only_the_predefined_keyvals_exist():
    (world,) = make_world(1)
    assert world.Get_attr(TAG_UB) == TAG_UB_VALUE
    assert error_class(world.Get_attr, 999) == errors.ERR_KEYVAL
    with no_default_instance(), pytest.raises(errors.Exception, match="not initialized"):
        Comm.Create_keyval()


# -- user keyvals ----------------------------------------------------------------------------------


def test_set_get_delete_and_free_keyval(comm):
    keyval = Comm.Create_keyval()
    assert keyval >= FIRST_USER_KEYVAL and keyval != KEYVAL_INVALID
    assert comm.Get_attr(keyval) is None
    value = [1, 2, 3]
    comm.Set_attr(keyval, value)
    assert comm.Get_attr(keyval) is value
    comm.Delete_attr(keyval)
    assert comm.Get_attr(keyval) is None
    comm.Delete_attr(keyval)  # not set: nothing to do
    assert Comm.Free_keyval(keyval) == KEYVAL_INVALID
    assert error_class(comm.Get_attr, keyval) == errors.ERR_KEYVAL
    assert error_class(comm.Set_attr, keyval, 1) == errors.ERR_KEYVAL
    assert error_class(Comm.Free_keyval, keyval) == errors.ERR_KEYVAL
    assert error_class(comm.Get_attr, KEYVAL_INVALID) == errors.ERR_KEYVAL


def test_keyval_numbers_are_reused_once_free_and_unused(world):
    first = Comm.Create_keyval()
    second = Comm.Create_keyval()
    assert second == first + 1
    Comm.Free_keyval(first)
    assert Comm.Create_keyval() == first
    Comm.Free_keyval(first)
    Comm.Free_keyval(second)


def test_a_freed_keyval_stays_usable_by_the_attributes_that_hold_it(comm):
    deleted = []
    keyval = Comm.Create_keyval(copy_fn=True, delete_fn=lambda o, k, v: deleted.append(v))
    comm.Set_attr(keyval, "kept")
    Comm.Free_keyval(keyval)
    assert Comm.Create_keyval() != keyval  # still in use: not handed out again
    assert comm.Get_attr(keyval) == "kept"
    dup = comm.Dup()
    assert dup.Get_attr(keyval) == "kept"
    dup.Free()
    comm.Delete_attr(keyval)
    assert deleted == ["kept", "kept"]
    assert error_class(comm.Get_attr, keyval) == errors.ERR_KEYVAL  # now gone


def test_keyvals_belong_to_one_kind_of_object(comm):
    comm_keyval = Comm.Create_keyval()
    type_keyval = Datatype.Create_keyval()
    datatype = MPI.INT.Dup()
    try:
        assert error_class(datatype.Set_attr, comm_keyval, 1) == errors.ERR_KEYVAL
        assert error_class(comm.Get_attr, type_keyval) == errors.ERR_KEYVAL
        assert error_class(Datatype.Free_keyval, comm_keyval) == errors.ERR_KEYVAL
    finally:
        datatype.Free()
        Comm.Free_keyval(comm_keyval)
        Datatype.Free_keyval(type_keyval)


def test_bad_arguments_raise_type_errors(comm):
    with pytest.raises(TypeError, match="copy_fn"):
        Comm.Create_keyval(copy_fn=3)
    with pytest.raises(TypeError, match="delete_fn"):
        Comm.Create_keyval(delete_fn="no")
    with pytest.raises(TypeError, match="keyval is an int"):
        comm.Get_attr("TAG_UB")
    keyval = Comm.Create_keyval(nopython=True)
    with pytest.raises(TypeError, match="nopython=True"):
        comm.Set_attr(keyval, "text")
    with pytest.raises(OverflowError):
        comm.Set_attr(keyval, 2**64)
    Comm.Free_keyval(keyval)


@given(st.integers(-(2**63), 2**64 - 1))
def test_nopython_values_are_unsigned_addresses(value):
    with default_instance():
        (world,) = make_world(1)
        keyval = Comm.Create_keyval(copy_fn=True, nopython=True)
        world.Set_attr(keyval, value)
        assert world.Get_attr(keyval) == value % 2**64
        dup = world.Dup()
        assert dup.Get_attr(keyval) == value % 2**64
        dup.Free()
        Comm.Free_keyval(keyval)


# -- callbacks -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("copy_fn", "copied"),
    [(None, False), (False, False), (True, True), (lambda o, k, v: NotImplemented, False)],
)
def test_what_dup_copies(comm, copy_fn, copied):
    keyval = Comm.Create_keyval(copy_fn=copy_fn)
    value = object()
    comm.Set_attr(keyval, value)
    dup = comm.Dup()
    assert dup.Get_attr(keyval) is (value if copied else None)
    dup.Free()
    comm.Delete_attr(keyval)
    Comm.Free_keyval(keyval)


def test_every_kind_of_dup_copies_attributes_and_keeps_hints_and_handler(comm):
    keyval = Comm.Create_keyval(copy_fn=lambda o, k, v: [*v, "copied"])
    comm.Set_attr(keyval, ["value"])
    comm.Set_errhandler(MPI.ERRORS_ARE_FATAL)
    hints = MPI.Info.Create({"mpi_assert_no_any_tag": "true"})
    dups = [comm.Dup(), comm.Dup(hints), comm.Dup_with_info(hints), comm.Clone()]
    for dup in dups:
        assert dup.Get_attr(keyval) == ["value", "copied"]
        assert dup.Get_errhandler() == MPI.ERRORS_ARE_FATAL
    given = dict(hints.items())
    assert [dict(dup.Get_info().items()) for dup in dups] == [{}, given, given, {}]
    for dup in dups:
        dup.Free()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    comm.Delete_attr(keyval)
    Comm.Free_keyval(keyval)


def test_copy_and_delete_callbacks_see_a_handle_the_keyval_and_the_value(comm):
    seen = []

    def copy_fn(obj, keyval, value):
        seen.append(("copy", type(obj), obj.Get_size(), keyval, value))
        return value + 1

    def delete_fn(obj, keyval, value):
        seen.append(("delete", type(obj), obj.Get_size(), keyval, value))

    keyval = Comm.Create_keyval(copy_fn, delete_fn)
    comm.Set_attr(keyval, 1)
    dup = comm.Dup()
    comm.Set_attr(keyval, 10)  # overwrite: the old value is deleted
    dup.Free()
    comm.Delete_attr(keyval)
    assert seen == [
        ("copy", Intracomm, 1, keyval, 1),
        ("delete", Intracomm, 1, keyval, 1),
        ("delete", Intracomm, 1, keyval, 2),
        ("delete", Intracomm, 1, keyval, 10),
    ]
    Comm.Free_keyval(keyval)


def test_the_callback_handle_is_null_afterwards(comm):
    kept = []
    keyval = Comm.Create_keyval(delete_fn=lambda o, k, v: kept.append(o))
    comm.Set_attr(keyval, "x")
    comm.Delete_attr(keyval)
    assert kept and not kept[0] and comm
    Comm.Free_keyval(keyval)


def test_free_deletes_every_attribute_the_last_set_first(comm):
    order = []
    keyvals = [Comm.Create_keyval(delete_fn=lambda o, k, v: order.append(v)) for _ in range(3)]
    for value, keyval in enumerate(keyvals):
        comm.Set_attr(keyval, value)
    comm.Set_attr(keyvals[0], 9)  # set again: now the last set (its old value 0 goes first)
    comm.Free()
    assert order == [0, 9, 2, 1]
    assert not comm
    for keyval in keyvals:
        Comm.Free_keyval(keyval)


def test_attribute_values_may_be_communicators_freed_by_the_callbacks(comm):
    # mpi4py's testAttrCopyDelete: the values are duplicates, duplicated and freed in turn.
    keyval = Comm.Create_keyval(
        copy_fn=lambda o, k, v: Comm.Dup(v), delete_fn=lambda o, k, v: Comm.Free(v)
    )
    dup1 = comm.Dup()
    comm.Set_attr(keyval, dup1)
    comm2 = comm.Dup()
    dup2 = comm2.Get_attr(keyval)
    assert dup2 and dup2 != dup1
    comm2.Free()
    assert dup2 == MPI.COMM_NULL
    comm.Delete_attr(keyval)
    assert dup1 == MPI.COMM_NULL
    Comm.Free_keyval(keyval)


def test_a_failing_copy_callback_fails_dup_and_undoes_the_copies(comm, capsys):
    deleted = []
    good = Comm.Create_keyval(copy_fn=True, delete_fn=lambda o, k, v: deleted.append(v))
    bad = Comm.Create_keyval(copy_fn=lambda o, k, v: 1 / 0)
    comm.Set_attr(good, "copied first")
    comm.Set_attr(bad, "fails")
    cids = set(comm._c.instance.cids)
    with pytest.raises(errors.Exception, match="copy callback") as info:
        comm.Dup()
    assert info.value.Get_error_class() == errors.ERR_OTHER
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    assert "ZeroDivisionError" in capsys.readouterr().err  # reported as mpi4py does
    assert deleted == ["copied first"]  # the half-built duplicate's attributes were deleted
    assert comm._c.instance.cids == cids  # and its context id given back
    comm.Delete_attr(bad)
    Comm.Free_keyval(bad)
    Comm.Free_keyval(good)


def test_an_mpi_exception_in_a_callback_keeps_its_error_class(comm, capsys):
    def refuse(obj, keyval, value):
        raise errors.Exception(errors.ERR_ARG, "refused")

    keyval = Comm.Create_keyval(copy_fn=refuse, delete_fn=refuse)
    comm.Set_attr(keyval, 1)
    assert error_class(comm.Dup) == errors.ERR_ARG
    assert error_class(comm.Delete_attr, keyval) == errors.ERR_ARG
    assert comm.Get_attr(keyval) is None  # deleted even so, as in mpi4py
    capsys.readouterr()
    Comm.Free_keyval(keyval)


def test_a_failing_delete_callback_is_reported_but_free_and_overwrite_go_on(comm, capsys):
    keyval = Comm.Create_keyval(delete_fn=lambda o, k, v: [][v])
    comm.Set_attr(keyval, 0)
    comm.Set_attr(keyval, 1)  # the old value's callback fails: reported only
    assert comm.Get_attr(keyval) == 1
    comm.Free()
    assert not comm
    assert capsys.readouterr().err.count("IndexError") == 2
    Comm.Free_keyval(keyval)


def test_finalize_deletes_self_attributes_first_then_world_while_both_work():
    with interpreter_world():
        order = []

        def delete_fn(obj, keyval, value):
            order.append((value, obj.Get_size(), MPI.COMM_WORLD.allreduce(1)))

        first = Comm.Create_keyval(delete_fn=delete_fn)
        second = Comm.Create_keyval(delete_fn=delete_fn)
        MPI.COMM_WORLD.Set_attr(first, "world")
        MPI.COMM_SELF.Set_attr(first, "self, set first")
        MPI.COMM_SELF.Set_attr(second, "self, set last")
        MPI.Finalize()
        assert order == [("self, set last", 1, 1), ("self, set first", 1, 1), ("world", 1, 1)]


def test_dup_copies_attributes_on_every_rank():
    worlds = make_world(3)
    with adopted(worlds[0]._c.instance):  # the process's instance holds the keyvals
        copies = []
        keyval = Comm.Create_keyval(
            copy_fn=lambda o, k, v: (v[0], v[1] + 1),
            delete_fn=lambda o, k, v: copies.append(v),
        )

        def body(world):
            world.Set_attr(keyval, (world.rank, 0))
            dup = world.Dup()
            again = dup.Dup()
            got = (dup.Get_attr(keyval), again.Get_attr(keyval), again.allreduce(1))
            again.Free()
            dup.Free()
            world.Delete_attr(keyval)
            return got

        results = run_ranks(worlds, body)
        assert results == [((rank, 1), (rank, 2), 3) for rank in range(3)]
        assert sorted(copies) == sorted(
            (rank, generation) for rank in range(3) for generation in range(3)
        )
        Comm.Free_keyval(keyval)


# -- datatypes -------------------------------------------------------------------------------------


def test_datatype_attributes_are_copied_by_dup_and_deleted_by_free(world):
    deleted = []
    keyval = Datatype.Create_keyval(
        copy_fn=lambda o, k, v: v * 2, delete_fn=lambda o, k, v: deleted.append(v)
    )
    original = BY_KEY["DOUBLE"].Dup()
    original.Set_attr(keyval, 21)
    dup = original.Dup()
    assert dup.Get_attr(keyval) == 42
    assert BY_KEY["DOUBLE"].Get_attr(keyval) is None  # the predefined type is untouched
    dup.Free()
    original.Free()
    assert deleted == [42, 21]
    assert error_class(original.Get_attr, keyval) == errors.ERR_TYPE  # DATATYPE_NULL now
    Datatype.Free_keyval(keyval)


def test_datatype_copy_exception_fails_dup(world, capsys):
    keyval = Datatype.Create_keyval(copy_fn=lambda o, k, v: {}[v])
    datatype = BY_KEY["INT"].Dup()
    datatype.Set_attr(keyval, "missing")
    assert error_class(datatype.Dup) == errors.ERR_OTHER
    assert "KeyError" in capsys.readouterr().err
    datatype.Free()
    Datatype.Free_keyval(keyval)
