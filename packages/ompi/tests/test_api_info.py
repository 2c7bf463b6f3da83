"""MPI.Info: MPI's calls, mpi4py's mapping methods, limits, INFO_NULL and INFO_ENV, and hints on
communicators (Dup, Dup_with_info, Set_info/Get_info, Split_type, Create_from_group)."""

import os
import pickle
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.ompi.api import rc
from ompy.ompi.api.testing import default_instance, make_world, run_ranks
from ompy.ompi.constants import THREAD_SINGLE

rc.initialize = False  # these tests use loopback instances, not a launched process
from ompy import MPI  # noqa: E402


def _error_class(info: pytest.ExceptionInfo) -> int:
    return info.value.Get_error_class()


# -- MPI's calls ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "items",
    [None, {}, [], {"a": "1", "b": "2"}, [("a", "1"), ("b", "2")], (p for p in [("a", "1")])],
)
def test_create_takes_nothing_a_mapping_pairs_or_an_info(items):
    expected = dict(items) if isinstance(items, (dict, list)) else None
    info = MPI.Info.Create(items)
    if expected is not None:
        assert dict(info.items()) == expected and info.Get_nkeys() == len(expected)
        assert dict(MPI.Info.Create(info).items()) == expected
    assert info and info != MPI.INFO_NULL and type(info) is MPI.Info


def test_create_refuses_what_is_not_items():
    for bad in (123, "ab", [("a",)], [1]):
        with pytest.raises(TypeError):
            MPI.Info.Create(bad)
    with pytest.raises(TypeError, match="value of info key 'a' must be a str"):
        MPI.Info.Create({"a": 1})


def test_set_get_delete_and_keys_in_the_order_first_set():
    info = MPI.Info.Create()
    info.Set("b", "1")
    info.Set("a", "2")
    info.Set("b", "3")  # a new value keeps the key's place
    assert [info.Get_nthkey(n) for n in range(info.Get_nkeys())] == ["b", "a"]
    assert info.Get("b") == "3" and info.Get("nope") is None
    info.Delete("b")
    assert info.keys() == ["a"]
    with pytest.raises(MPI.Exception, match="no key 'b'") as error:
        info.Delete("b")
    assert _error_class(error) == MPI.ERR_INFO_NOKEY
    with pytest.raises(MPI.Exception, match="there is no key 1") as error:
        info.Get_nthkey(1)
    assert _error_class(error) == MPI.ERR_ARG


def test_keys_and_values_have_open_mpis_limits():
    assert (MPI.MAX_INFO_KEY, MPI.MAX_INFO_VAL) == (36, 256)
    info = MPI.Info.Create()
    info.Set("k" * 35, "v" * 255)  # the longest allowed
    for key in ("k" * 36, "", "a\0b", "é" * 18):  # 36 bytes of UTF-8
        with pytest.raises(MPI.Exception, match="MAX_INFO_KEY") as error:
            info.Set(key, "v")
        assert _error_class(error) == MPI.ERR_INFO_KEY
        with pytest.raises(MPI.Exception):
            info.Get(key)
    for value in ("v" * 256, ""):
        with pytest.raises(MPI.Exception, match="MAX_INFO_VAL") as error:
            info.Set("k", value)
        assert _error_class(error) == MPI.ERR_INFO_VALUE
    with pytest.raises(TypeError, match="info key must be a str"):
        info.Set(b"k", "v")
    with pytest.raises(UnicodeEncodeError):  # as mpi4py: keys travel as UTF-8
        info.Set("\ud800", "v")
    assert info.Get_nkeys() == 1  # nothing else got in


def test_dup_is_independent_and_free_makes_the_handle_null():
    info = MPI.Info.Create({"a": "1"})
    same = MPI.Info(info)
    dup = info.Dup()
    dup.Set("b", "2")
    assert same == info and dup != info and info.keys() == ["a"]
    info.Free()
    assert info == MPI.INFO_NULL and not info
    assert same and same.Get("a") == "1"  # another handle still names the object
    assert dup.items() == [("a", "1"), ("b", "2")]


def test_every_call_on_a_null_info_raises_err_info():
    null = MPI.Info()
    assert not null and null == MPI.INFO_NULL
    for call in (
        null.Free,
        null.Dup,
        null.Get_nkeys,
        lambda: null.Get("a"),
        lambda: null.Set("a", "b"),
        lambda: null.Delete("a"),
        lambda: null.Get_nthkey(0),
    ):
        with pytest.raises(MPI.Exception, match="INFO_NULL") as error:
            call()
        assert _error_class(error) == MPI.ERR_INFO


# -- mpi4py's mapping methods ---------------------------------------------------------------------


def test_mapping_methods_read_and_write_like_a_dict():
    info = MPI.Info.Create()
    info["a"] = "1"
    info.update({"b": "2"}, c="3")
    info.update([("d", "4")])
    assert len(info) == 4 and "a" in info and "z" not in info and list(info) == list("abcd")
    assert info["b"] == "2" and info.get("z") is None and info.get("z", "x") == "x"
    assert info.values() == ["1", "2", "3", "4"]
    del info["a"]
    assert info.pop("b") == "2" and info.pop("b", "gone") == "gone"
    assert info.popitem() == ("d", "4")  # the key set last
    copy = info.copy()
    info.clear()
    assert len(info) == 0 and copy.items() == [("c", "3")]
    for call in (lambda: info["a"], lambda: info.pop("a"), info.popitem):
        with pytest.raises(KeyError):
            call()
    with pytest.raises(KeyError):
        del info["a"]


def test_a_null_info_reads_as_empty_and_refuses_writes():
    null = MPI.INFO_NULL
    assert len(null) == 0 and "a" not in null and list(null) == []
    assert null.keys() == null.values() == null.items() == []
    assert null.get("a", "d") == "d" and null.pop("a", "d") == "d"
    assert not null.copy() and null.copy() is not null
    null.clear()
    for call in (lambda: null["a"], null.popitem, lambda: null.update(a="1")):
        with pytest.raises(KeyError):
            call()
    with pytest.raises(KeyError):
        null["a"] = "1"


def test_pickling_sends_items_and_keeps_the_predefined_handles():
    assert pickle.loads(pickle.dumps(MPI.INFO_NULL)) is MPI.INFO_NULL
    assert pickle.loads(pickle.dumps(MPI.INFO_ENV)) is MPI.INFO_ENV
    env = pickle.loads(pickle.dumps(MPI.Info(MPI.INFO_ENV)))
    assert env is not MPI.INFO_ENV and env == MPI.INFO_ENV
    info = pickle.loads(pickle.dumps(MPI.Info.Create({"a": "1", "b": "2"})))
    assert info.items() == [("a", "1"), ("b", "2")]


# -- INFO_ENV -------------------------------------------------------------------------------------

ENV_KEYS = {"command", "argv", "maxprocs", "soft", "host", "arch", "wdir", "file", "thread_level"}


def test_info_env_describes_this_process_and_is_read_only():
    env = MPI.INFO_ENV
    assert env and set(env.keys()) <= ENV_KEYS
    assert env.Get("host") == socket.gethostname() and env.Get("wdir") == os.getcwd()
    with default_instance() as instance:
        instance.thread_level = THREAD_SINGLE
        assert env.Get("maxprocs") == "1" and env.Get("thread_level") == "MPI_THREAD_SINGLE"
    with pytest.raises(MPI.Exception, match="read-only") as error:
        env.Set("host", "x")
    assert _error_class(error) == MPI.ERR_INFO
    with pytest.raises(MPI.Exception, match="cannot be freed"):
        env.Free()
    dup = env.Dup()
    dup.Set("host", "x")
    assert dup.Get("host") == "x" and env.Get("host") == socket.gethostname()
    copy = MPI.Info(env)
    copy.Free()  # a handle of one's own can be let go of
    assert not copy and env


def test_create_env_describes_the_given_command_line():
    info = MPI.Info.Create_env(["prog", "-x", "1"])
    assert info.Get("command") == "prog" and info.Get("argv") == "-x 1"
    info.Set("soft", "1:4")  # an ordinary, writable info
    assert MPI.Info.Create_env("prog").Get("argv") is None
    assert MPI.Info.Create_env([]).Get("command") == MPI.INFO_ENV.Get("command")
    assert MPI.Info.Create_env(args=None).keys() == MPI.INFO_ENV.keys()
    with pytest.raises(TypeError):
        MPI.Info.Create_env([1, 2])


# -- round trips (property-based) -----------------------------------------------------------------

# Any text without NUL and lone surrogates (which UTF-8 cannot encode), within the byte limits.
text = st.characters(blacklist_characters="\0", blacklist_categories=("Cs",))
keys = st.text(text, min_size=1, max_size=35).filter(lambda k: len(k.encode()) < 36)
values = st.text(text, min_size=1, max_size=255).filter(lambda v: len(v.encode()) < 256)


@given(st.dictionaries(keys, values, max_size=8))
def test_items_round_trip_through_create_set_dup_and_pickle(items):
    info = MPI.Info.Create(items)
    assert dict(info.items()) == items and list(info) == list(items)
    built = MPI.Info.Create()
    for key, value in items.items():
        built.Set(key, value)
        assert built.Get(key) == value and key in built
    assert built.items() == info.items() == info.Dup().items()
    assert pickle.loads(pickle.dumps(info)).items() == info.items()


@given(st.dictionaries(keys, values, max_size=6), st.dictionaries(keys, values, max_size=6))
def test_hints_round_trip_through_dup_with_info_and_set_info(first, second):
    (world,) = make_world(1)
    dup = world.Dup_with_info(MPI.Info.Create(first))
    assert dict(dup.Get_info().items()) == first
    dup.Set_info(MPI.Info.Create(second))
    assert dict(dup.info.items()) == first | second  # Set_info adds to the hints in force
    assert dict(dup.Dup().Get_info().items()) == first | second  # Dup copies them
    dup.Free()


# -- hints on communicators -----------------------------------------------------------------------


def test_communicators_keep_the_hints_they_were_given():
    def body(world):
        hints = MPI.Info.Create({"mpi_assert_no_any_tag": "true"})
        dup = world.Dup(hints)
        withinfo = world.Dup_with_info(hints)
        hints.Set("later", "x")  # the communicator keeps its own copy
        plain = world.Dup()
        shared = world.Split_type(MPI.COMM_TYPE_SHARED, info=hints)
        split = world.Split(0)
        got = dup.Get_info()
        got.Set("mine", "y")  # a new object each time
        world.info = MPI.Info.Create({"w": "1"})
        return (
            dup.Get_info().items(),
            withinfo.info.items(),
            plain.Get_info().items(),
            shared.Get_info().items(),
            split.Get_info().items(),
            world.Get_info().items(),
        )

    for result in run_ranks(make_world(3), body):
        assert result == (
            [("mpi_assert_no_any_tag", "true")],
            [("mpi_assert_no_any_tag", "true")],
            [],
            [("mpi_assert_no_any_tag", "true"), ("later", "x")],
            [],
            [("w", "1")],
        )


def test_create_from_group_keeps_its_hints():
    def body(world):
        group = world.Get_group()
        comm = MPI.Intracomm.Create_from_group(
            group, "hints", info=MPI.Info.Create({"mpi_assert_exact_length": "true"})
        )
        return comm.Get_info().items()

    assert run_ranks(make_world(2), body) == [[("mpi_assert_exact_length", "true")]] * 2


def test_info_arguments_must_be_info_objects():
    (world,) = make_world(1)
    for call in (
        lambda: world.Dup_with_info({"a": "1"}),
        lambda: world.Set_info({"a": "1"}),
        lambda: world.Dup({"a": "1"}),
        lambda: world.Split_type(MPI.COMM_TYPE_SHARED, info="a=1"),
    ):
        with pytest.raises(TypeError, match="info must be an Info"):
            call()
    assert world.Dup(MPI.INFO_NULL).Get_info().items() == []
    world.Set_info(MPI.INFO_NULL)
    assert world.Get_info().items() == []
