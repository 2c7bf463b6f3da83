"""``MPI.Info``: ordered key/value hints, ``INFO_NULL`` and ``INFO_ENV``.

An info object is an ordered set of string keys with string values, passed to calls as hints
(``Comm.Dup_with_info``, ``Session.Init``, ``Intracomm.Create_from_group``, ...) and returned by
``Get_info``.  The handle follows mpi4py: ``Info(other)`` refers to the same object, ``Free``
turns the handle null, a null handle is false and equal to ``INFO_NULL``, and besides MPI's own
calls (``Set``/``Get``/``Delete``/``Get_nkeys``/``Get_nthkey``/``Dup``) it has mpi4py's mapping
methods.  Limits are Open MPI's: a key is 1..``MAX_INFO_KEY - 1`` bytes of UTF-8, a value
1..``MAX_INFO_VAL - 1`` (``ERR_INFO_KEY``/``ERR_INFO_VALUE`` otherwise); a call on a null
info raises ``ERR_INFO``.

``INFO_ENV`` describes how this process was started (the keys MPI defines: ``command``,
``argv``, ``maxprocs``, ``soft``, ``host``, ``arch``, ``wdir``, ``file``, ``thread_level``; the
ones with nothing to report are absent).  It is read fresh from the process at every read, so
it holds no state of its own, and it is read-only.  Pickling an info sends its items, as
mpi4py does; ``INFO_NULL`` and ``INFO_ENV`` come back as themselves.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Self

import attrs

from ..constants import MAX_INFO_KEY, MAX_INFO_VAL
from ..errors import ERR_ARG, ERR_INFO, ERR_INFO_KEY, ERR_INFO_NOKEY, ERR_INFO_VALUE
from ..errors import Exception as MPIException
from ..handle import Handle, predefine
from ..instance import default
from .checks import as_int

__all__ = ["INFO_ENV", "INFO_NULL", "MAX_INFO_KEY", "MAX_INFO_VAL", "Info", "info_items"]


@attrs.define(eq=False)
class InfoData:
    """What an ``Info`` handle refers to: the items, in the order their keys were first set."""

    items: dict[str, str] = attrs.field(factory=dict)
    #: The object behind ``INFO_ENV``: its items come from the process, and it cannot change.
    environment: bool = False


def environment_items(args: Sequence[str] | None = None) -> dict[str, str]:
    """The ``INFO_ENV`` keys for this process (``args``: the command line to describe)."""
    from .session import THREAD_LEVEL_NAMES  # the session module imports this one

    argv = list(sys.orig_argv if args is None else args)
    items: dict[str, str] = {}
    if argv:
        items["command"] = argv[0]
        if len(argv) > 1:
            items["argv"] = " ".join(argv[1:])
    instance = default()
    if instance is not None:
        items["maxprocs"] = str(instance.world_size)
    items["host"] = socket.gethostname()
    items["arch"] = platform.machine() or sys.platform
    items["wdir"] = os.getcwd()
    if instance is not None:
        items["thread_level"] = THREAD_LEVEL_NAMES[instance.thread_level]
    # Values must fit MAX_INFO_VAL as any other value does (a long command line is cut).
    return {key: _clip(value) for key, value in items.items()}


def _clip(value: str) -> str:
    data = value.encode()
    if len(data) < MAX_INFO_VAL:
        return value
    return data[: MAX_INFO_VAL - 1].decode(errors="ignore")


def _key(key: object, call: str) -> str:
    if not isinstance(key, str):
        raise TypeError(f"{call}: an info key must be a str, not {type(key).__name__}")
    size = len(key.encode())
    if not 0 < size < MAX_INFO_KEY or "\0" in key:
        raise MPIException(
            ERR_INFO_KEY,
            f"{call}: info key {key!r} is {size} bytes long; keys are 1..{MAX_INFO_KEY - 1} "
            "bytes (MAX_INFO_KEY - 1) without NUL characters",
        )
    return key


def _value(value: object, key: str, call: str) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"{call}: the value of info key {key!r} must be a str, not {type(value).__name__}"
        )
    size = len(value.encode())
    if not 0 < size < MAX_INFO_VAL or "\0" in value:
        raise MPIException(
            ERR_INFO_VALUE,
            f"{call}: the value of info key {key!r} is {size} bytes long; values are "
            f"1..{MAX_INFO_VAL - 1} bytes (MAX_INFO_VAL - 1) without NUL characters",
        )
    return value


def _pairs(items: object, call: str) -> Iterator[tuple[Any, Any]]:
    """The (key, value) pairs of an Info, a mapping or an iterable of pairs."""
    if isinstance(items, (Info, Mapping)):
        for key in list(items.keys()):
            yield key, items[key]
        return
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(
            f"{call}: expecting an Info, a mapping or (key, value) pairs, "
            f"not {type(items).__name__}"
        )
    for pair in items:
        try:
            key, value = pair
        except (TypeError, ValueError):
            raise TypeError(f"{call}: expecting (key, value) pairs, got {pair!r}") from None
        yield key, value


class Info(Handle, referent="_i"):
    """Info object."""

    __slots__ = ("_i",)

    _i: InfoData | None

    @classmethod
    def _of(cls, data: InfoData | None) -> Self:
        handle = cls.__new__(cls)
        handle._i = data
        return handle

    def _data(self, call: str) -> InfoData:
        data = self._i
        if data is None:
            raise MPIException(ERR_INFO, f"{call}: the info is INFO_NULL (a null or freed info)")
        return data

    def _read(self, call: str) -> dict[str, str]:
        data = self._data(call)
        return environment_items() if data.environment else data.items

    def _write(self, call: str) -> dict[str, str]:
        data = self._data(call)
        if data.environment:
            raise MPIException(ERR_INFO, f"{call}: INFO_ENV is read-only; Dup it to change it")
        return data.items

    def __repr__(self) -> str:
        data = self._i
        if data is None:
            return f"<{type(self).__name__} INFO_NULL>"
        if data.environment:
            return f"<{type(self).__name__} INFO_ENV>"
        return f"<{type(self).__name__} {data.items!r}>"

    def _reduce_user(self) -> tuple[Any, ...]:
        """An info travels as its items (mpi4py's form): ``Info.Create(items)``."""
        data = self._data("Info.__reduce__")
        return (type(self).Create, (list(data.items.items()),))

    def _free(self) -> None:
        self.Free()

    # -- the info object -----------------------------------------------------------------------

    @classmethod
    def Create(
        cls, items: Info | Mapping[str, str] | Iterable[tuple[str, str]] | None = None
    ) -> Self:
        """Create a new info object (with ``items``, if given)."""
        data = InfoData()
        if items is not None:
            for raw_key, value in _pairs(items, "Info.Create"):
                key = _key(raw_key, "Info.Create")
                data.items[key] = _value(value, key, "Info.Create")
        return cls._of(data)

    @classmethod
    def Create_env(cls, args: Sequence[str] | None = None) -> Self:
        """Create a new environment info object (describing ``args``, this process by default)."""
        if isinstance(args, str):
            args = [args]
        elif args is not None:
            if not isinstance(args, Sequence) or not all(isinstance(a, str) for a in args):
                raise TypeError(f"Info.Create_env: args must be a sequence of str, not {args!r}")
            if not args:
                args = None
        return cls._of(InfoData(environment_items(args)))

    def Free(self) -> None:
        """Free an info object."""
        data = self._data("Info.Free")
        if data.environment and self is INFO_ENV:
            raise MPIException(ERR_INFO, "Info.Free: INFO_ENV is predefined and cannot be freed")
        self._i = None

    def Dup(self) -> Self:
        """Duplicate an existing info object."""
        return type(self)._of(InfoData(dict(self._read("Info.Dup"))))

    def Get(self, key: str) -> str | None:
        """Retrieve the value associated with a key (None if the key is not set)."""
        items = self._read("Info.Get")
        return items.get(_key(key, "Info.Get"))

    def Set(self, key: str, value: str) -> None:
        """Store a value associated with a key."""
        items = self._write("Info.Set")
        key = _key(key, "Info.Set")
        items[key] = _value(value, key, "Info.Set")

    def Delete(self, key: str) -> None:
        """Remove a (key, value) pair from info."""
        items = self._write("Info.Delete")
        key = _key(key, "Info.Delete")
        if key not in items:
            raise MPIException(ERR_INFO_NOKEY, f"Info.Delete: the info has no key {key!r}")
        del items[key]

    def Get_nkeys(self) -> int:
        """Return the number of currently defined keys in info."""
        return len(self._read("Info.Get_nkeys"))

    def Get_nthkey(self, n: int) -> str:
        """Return the *n*-th defined key in info."""
        items = self._read("Info.Get_nthkey")
        n = as_int(n, "Info.Get_nthkey: n")
        if not 0 <= n < len(items):
            raise MPIException(
                ERR_ARG,
                f"Info.Get_nthkey: there is no key {n}; the info has {len(items)} keys",
            )
        return list(items)[n]

    # -- mpi4py's mapping methods (a null info reads as empty and refuses writes) --------------

    def __len__(self) -> int:
        return 0 if self._i is None else self.Get_nkeys()

    def __contains__(self, key: object) -> bool:
        if self._i is None:
            return False
        return self.Get(key) is not None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __getitem__(self, key: str) -> str:
        value = None if self._i is None else self.Get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: str) -> None:
        if self._i is None:
            raise KeyError(key)
        self.Set(key, value)

    def __delitem__(self, key: str) -> None:
        if self._i is None or key not in self:
            raise KeyError(key)
        self.Delete(key)

    def get(self, key: str, default: str | None = None) -> str | None:
        """Retrieve value by key."""
        value = None if self._i is None else self.Get(key)
        return default if value is None else value

    def keys(self) -> list[str]:
        """Return list of keys."""
        return [] if self._i is None else list(self._read("Info.keys"))

    def values(self) -> list[str]:
        """Return list of values."""
        return [] if self._i is None else list(self._read("Info.values").values())

    def items(self) -> list[tuple[str, str]]:
        """Return list of items."""
        return [] if self._i is None else list(self._read("Info.items").items())

    def update(
        self,
        items: Info | Mapping[str, str] | Iterable[tuple[str, str]] = (),
        **kwds: str,
    ) -> None:
        """Update contents."""
        if self._i is None:
            raise KeyError("update of a null info")
        for key, value in _pairs(items, "Info.update"):
            self.Set(key, value)
        for key, value in kwds.items():
            self.Set(key, value)

    def pop(self, key: str, *default: str) -> str:
        """Pop value by key."""
        if len(default) > 1:
            raise TypeError(f"Info.pop expected at most 2 arguments, got {1 + len(default)}")
        value = None if self._i is None else self.Get(key)
        if value is not None:
            self.Delete(key)
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[str, str]:
        """Pop the last item (the key set most recently)."""
        if self._i is None:
            raise KeyError("popitem of a null info")
        items = self._read("Info.popitem")
        if not items:
            raise KeyError("popitem of an empty info")
        key = list(items)[-1]
        value = items[key]
        self.Delete(key)
        return key, value

    def copy(self) -> Self:
        """Copy contents (a null info copies to a null info)."""
        return type(self)._of(None) if self._i is None else self.Dup()

    def clear(self) -> None:
        """Clear contents."""
        if self._i is not None:
            self._write("Info.clear").clear()


#: Null info handle (Open MPI's integer handles: INFO_NULL 0, INFO_ENV 1).
INFO_NULL = predefine(Info(), "INFO_NULL", 0)
#: Environment info handle: how this process was started.
INFO_ENV = predefine(Info._of(InfoData(environment=True)), "INFO_ENV", 1)


def info_items(info: object, call: str) -> dict[str, str]:
    """The hints of an ``info`` argument: None, ``INFO_NULL`` (or a freed info) give none."""
    if info is None:
        return {}
    if not isinstance(info, Info):
        raise TypeError(f"{call}: info must be an Info, not {type(info).__name__}")
    return {} if info._i is None else dict(info._read(call))
