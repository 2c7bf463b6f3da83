"""Attribute caching: keyvals, the attributes an object carries, and their callbacks.

MPI lets a program hang values on communicators, datatypes and windows under *keyvals*
(``Comm.Create_keyval``).  A keyval carries two callbacks, with mpi4py's meanings:

- ``copy_fn(obj, keyval, value)`` runs when the object is duplicated (``Comm.Dup``,
  ``Datatype.Dup``).  ``None`` (or ``False``) does not copy the attribute, ``True`` copies the
  value as it is, and a callable's result is the new object's value, unless it returns
  ``NotImplemented`` (then nothing is copied).  An exception fails the duplication with an
  ``MPI.Exception`` (its error class if it is one, ``ERR_OTHER`` otherwise).
- ``delete_fn(obj, keyval, value)`` runs when the value goes away: ``Delete_attr``, an
  overwrite by ``Set_attr``, and ``Free`` of the object (every attribute, the last set first).
  An exception makes ``Delete_attr`` raise ``MPI.Exception`` (the attribute is gone anyway); on
  an overwrite or a free it is reported on stderr and the call goes on, as in mpi4py.

``nopython=True`` keyvals hold integers (a C ``void *`` in MPI): values are stored as
unsigned pointer-sized numbers.  Freeing a keyval (``Free_keyval``) only stops new uses: the
attributes already set keep it alive until they are deleted.  The callbacks get a temporary
handle to the object that turns null when the callback returns.

The keyval table (:class:`KeyvalTable`) belongs to the process's instance; every kind of
object (``"Comm"``, ``"Datatype"``, ``"Win"``) draws its keyvals from it and a keyval used on
the wrong kind is an ``ERR_KEYVAL`` error.  Each object carries an :class:`AttributeSet`.
"""

from __future__ import annotations

import operator
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any, Final

import attrs

from .constants import (
    APPNUM,
    HOST,
    IO,
    KEYVAL_INVALID,
    LASTUSEDCODE,
    TAG_UB,
    UNIVERSE_SIZE,
    WTIME_IS_GLOBAL,
)
from .errors import ERR_KEYVAL, ERR_OTHER
from .errors import Exception as MPIException

#: The first keyval given to a program (Open MPI's predefined communicator and window keyvals
#: come first: ``TAG_UB`` is 0 ... ``MPI_FT`` is 12).
FIRST_USER_KEYVAL: Final = 13

#: A ``nopython`` value is a ``void *``: this many bits, read back unsigned.
_POINTER_BITS: Final = 64

#: Makes a temporary handle to the object (for a callback) and nulls it afterwards.
HandleFactory = Callable[[], Any]
HandleRelease = Callable[[Any], None]
HandlePair = tuple[HandleFactory, HandleRelease]


@attrs.define(eq=False)
class Keyval:
    """One attribute key: its number, the kind of object it is for, and its callbacks."""

    number: int
    #: ``"Comm"``, ``"Datatype"`` or ``"Win"``.
    kind: str
    copy_fn: Callable[[Any, int, Any], Any] | bool | None
    delete_fn: Callable[[Any, int, Any], Any] | None
    nopython: bool = False
    #: MPI's own keyvals (``TAG_UB``, ...): programs cannot set, delete or free them.
    predefined: bool = False
    #: ``Free_keyval`` was called: no new attributes, the existing ones keep working.
    freed: bool = False
    #: How many attributes use this keyval (a freed keyval is forgotten when none is left).
    refs: int = 0

    def value_in(self, value: Any, call: str) -> Any:
        """``value`` as stored: a ``nopython`` value is an unsigned pointer-sized integer."""
        if not self.nopython:
            return value
        try:
            number = operator.index(value)
        except TypeError:
            raise TypeError(
                f"{call}: keyval {self.number} was created with nopython=True; its values are "
                f"integers (addresses), not {type(value).__name__}"
            ) from None
        if not -(2 ** (_POINTER_BITS - 1)) <= number < 2**_POINTER_BITS:
            raise OverflowError(f"{call}: {number} does not fit in a {_POINTER_BITS}-bit address")
        return number & (2**_POINTER_BITS - 1)


def make_keyval(
    number: int,
    kind: str,
    *,
    copy_fn: object,
    delete_fn: object,
    nopython: object,
    call: str,
) -> Keyval:
    """A new keyval, with callbacks checked and normalized as mpi4py does."""
    if copy_fn is False:
        copy_fn = None
    if delete_fn is False or delete_fn is True:
        delete_fn = None
    if copy_fn is not None and copy_fn is not True and not callable(copy_fn):
        raise TypeError(
            f"{call}: copy_fn must be None, True, False or a callable copy_fn(obj, keyval, "
            f"value), not {type(copy_fn).__name__}"
        )
    if delete_fn is not None and not callable(delete_fn):
        raise TypeError(
            f"{call}: delete_fn must be None or a callable delete_fn(obj, keyval, value), not "
            f"{type(delete_fn).__name__}"
        )
    return Keyval(number, kind, copy_fn, delete_fn, bool(nopython))  # type: ignore[arg-type]


def _predefined(number: int, *, inherit: bool = True) -> Keyval:
    # Open MPI's: inherited by Dup (MPI_COMM_DUP_FN) except LASTUSEDCODE (COMM_WORLD's only).
    return Keyval(number, "Comm", True if inherit else None, None, predefined=True)


#: The predefined communicator keyvals, set on ``COMM_WORLD`` (see ``api.attributes``).
PREDEFINED_COMM_KEYVALS: Final[dict[int, Keyval]] = {
    keyval.number: keyval
    for keyval in (
        _predefined(TAG_UB),
        _predefined(HOST),
        _predefined(IO),
        _predefined(WTIME_IS_GLOBAL),
        _predefined(APPNUM),
        _predefined(LASTUSEDCODE, inherit=False),
        _predefined(UNIVERSE_SIZE),
    )
}


class KeyvalTable:
    """The keyvals of one instance, for every kind of object (DESIGN §10: on the instance)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keyvals: dict[int, Keyval] = dict(PREDEFINED_COMM_KEYVALS)

    def __len__(self) -> int:
        return len(self._keyvals)

    def create(
        self, kind: str, copy_fn: object, delete_fn: object, nopython: object, call: str
    ) -> int:
        """A new keyval for objects of ``kind``: the lowest number not in use."""
        with self._lock:
            number = FIRST_USER_KEYVAL
            while number in self._keyvals:
                number += 1
            self._keyvals[number] = make_keyval(
                number, kind, copy_fn=copy_fn, delete_fn=delete_fn, nopython=nopython, call=call
            )
        return number

    def lookup(self, kind: str, keyval: object, call: str, *, freed_ok: bool = False) -> Keyval:
        """The keyval ``keyval`` of ``kind``; ``ERR_KEYVAL`` if there is no such usable key.

        ``freed_ok`` admits a freed keyval still in use (getting or deleting its attributes).
        """
        number = as_keyval(keyval, call)
        found = self._keyvals.get(number)
        if found is None or (found.freed and not freed_ok):
            raise MPIException(ERR_KEYVAL, f"{call}: {describe(number)} is not a keyval here")
        if found.kind != kind:
            raise MPIException(
                ERR_KEYVAL,
                f"{call}: keyval {number} was created for {found.kind} attributes, not {kind} "
                f"(use {kind}.Create_keyval)",
            )
        return found

    def free(self, kind: str, keyval: object, call: str) -> int:
        """Free a keyval (attributes using it keep it until deleted); returns KEYVAL_INVALID."""
        found = self.lookup(kind, keyval, call)
        if found.predefined:
            raise MPIException(
                ERR_KEYVAL, f"{call}: keyval {found.number} is predefined and cannot be freed"
            )
        with self._lock:
            found.freed = True
            self._forget_if_unused(found)
        return KEYVAL_INVALID

    def acquire(self, keyval: Keyval) -> None:
        """One more attribute uses ``keyval``."""
        if keyval.predefined:
            return
        with self._lock:
            keyval.refs += 1

    def release(self, keyval: Keyval) -> None:
        """One attribute using ``keyval`` is gone."""
        if keyval.predefined:
            return
        with self._lock:
            keyval.refs -= 1
            self._forget_if_unused(keyval)

    def _forget_if_unused(self, keyval: Keyval) -> None:
        if keyval.freed and keyval.refs <= 0 and self._keyvals.get(keyval.number) is keyval:
            del self._keyvals[keyval.number]


def as_keyval(keyval: object, call: str) -> int:
    """A keyval argument as an int (mpi4py's ``int keyval``: a TypeError otherwise)."""
    if isinstance(keyval, bool) or not isinstance(keyval, int):
        try:
            return operator.index(keyval)  # type: ignore[arg-type]
        except TypeError:
            raise TypeError(f"{call}: a keyval is an int, not {type(keyval).__name__}") from None
    return keyval


def describe(number: int) -> str:
    if number == KEYVAL_INVALID:
        return "KEYVAL_INVALID"
    return f"{number} (never created, or freed)"


# -- the attributes of one object -----------------------------------------------------------------


class AttributeSet:
    """The attributes one object carries: keyval number -> (keyval, value), in setting order."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[int, tuple[Keyval, Any]] = {}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, number: object) -> bool:
        return number in self._items

    def __iter__(self) -> Iterator[int]:
        return iter(self._items)

    def get(self, number: int) -> tuple[Keyval, Any] | None:
        return self._items.get(number)

    def put(self, keyval: Keyval, value: Any) -> None:
        """Store a value without callbacks (predefined attributes, copies made by ``Dup``)."""
        self._items[keyval.number] = (keyval, value)

    def set(
        self,
        table: KeyvalTable,
        keyval: Keyval,
        value: Any,
        handles: HandlePair,
        call: str,
    ) -> None:
        """``Set_attr``: store ``value``; the old value, if any, goes through ``delete_fn``."""
        value = keyval.value_in(value, call)
        old = self._items.pop(keyval.number, None)
        self._items[keyval.number] = (keyval, value)  # the last set, for the deletion order
        if old is None:
            table.acquire(keyval)
            return
        error = _run_delete(keyval, old[1], handles)
        if error is not None:
            report(error)

    def delete(
        self,
        table: KeyvalTable,
        keyval: Keyval,
        handles: HandlePair,
        call: str,
    ) -> None:
        """``Delete_attr``: drop the value (if set) and run ``delete_fn`` on it."""
        old = self._items.pop(keyval.number, None)
        if old is None:
            return
        table.release(keyval)
        error = _run_delete(keyval, old[1], handles)
        if error is not None:
            report(error)
            raise callback_error(error, call, "delete", keyval.number) from error

    def delete_all(self, table: KeyvalTable | None, handles: HandlePair) -> None:
        """``Free`` of the object: every attribute goes, the last set first.

        A failing ``delete_fn`` is reported on stderr and the others still run.
        """
        while True:
            try:
                _, (keyval, value) = self._items.popitem()  # the last inserted: one step
            except KeyError:
                return
            if table is not None:
                table.release(keyval)
            error = _run_delete(keyval, value, handles)
            if error is not None:
                report(error)

    def copy_to(
        self,
        target: AttributeSet,
        table: KeyvalTable | None,
        handles: HandlePair,
        call: str,
    ) -> None:
        """``Dup``: put the copies ``copy_fn`` asks for into ``target``, in setting order.

        A failing ``copy_fn`` raises ``MPI.Exception`` (the caller deletes what was copied).
        """
        for keyval, original in list(self._items.values()):
            copy_fn = keyval.copy_fn
            if copy_fn is None:
                continue
            value = original
            if copy_fn is not True:
                handle, release = handles
                obj = handle()
                try:
                    value = copy_fn(obj, keyval.number, original)
                except BaseException as error:  # the program's callback: reported, then raised
                    report(error)
                    raise callback_error(error, call, "copy", keyval.number) from error
                finally:
                    release(obj)
                if value is NotImplemented:
                    continue
                value = keyval.value_in(value, call)
            target.put(keyval, value)
            if table is not None:
                table.acquire(keyval)


def _run_delete(keyval: Keyval, value: Any, handles: HandlePair) -> BaseException | None:
    """Run ``delete_fn(obj, keyval, value)``; the exception it raised, if any."""
    delete_fn = keyval.delete_fn
    if delete_fn is None:
        return None
    handle, release = handles
    obj = handle()
    try:
        delete_fn(obj, keyval.number, value)
    except BaseException as error:  # the program's callback: the caller decides
        return error
    finally:
        release(obj)
    return None


def report(error: BaseException) -> None:
    """Show a callback's exception on stderr, as mpi4py does for errors in MPI callbacks."""
    traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)


def callback_error(error: BaseException, call: str, which: str, number: int) -> MPIException:
    """The ``MPI.Exception`` a failed callback turns into (its own class if it is one)."""
    code = error.Get_error_code() if isinstance(error, MPIException) else ERR_OTHER
    return MPIException(code, f"{call}: the {which} callback of keyval {number} raised {error!r}")


# -- the methods of objects that cache attributes --------------------------------------------------


def process_keyvals() -> KeyvalTable | None:
    """The keyval table of the process's (default) instance, if there is one.

    Keyvals are created by class methods (``Comm.Create_keyval``), which have no object to
    take an instance from: the process's instance owns them all.
    """
    from .instance import default  # the instance module builds on attributes

    instance = default()
    return instance.keyvals if instance is not None else None


def _keyval_table(number: int, call: str) -> KeyvalTable:
    """The process's keyval table; without an instance no keyval exists (``ERR_KEYVAL``)."""
    from .instance import default  # the instance module builds on attributes

    instance = default()
    if instance is None:
        raise MPIException(
            ERR_KEYVAL,
            f"{call}: {describe(number)} is not a keyval (MPI is not initialized, so no keyval "
            "was created)",
        )
    return instance.keyvals


class CachesAttributes:
    """``Create_keyval``/``Free_keyval``/``Set_attr``/``Get_attr``/``Delete_attr`` for a kind.

    A handle class sets ``_attr_kind`` and provides ``_attributes(call)`` (the live object's
    :class:`AttributeSet`, an MPI error for a null handle) and ``_attr_handle()`` (a temporary
    handle for callbacks, and how to null it).  Keyvals come from the process's instance.
    """

    __slots__ = ()

    _attr_kind: str

    def _attributes(self, call: str) -> AttributeSet:
        raise NotImplementedError

    def _attr_handle(self) -> HandlePair:
        raise NotImplementedError

    @classmethod
    def _keyval(cls, keyval: object, call: str, *, freed_ok: bool = False) -> Keyval:
        number = as_keyval(keyval, call)
        if cls._attr_kind == "Comm" and number in PREDEFINED_COMM_KEYVALS:
            return PREDEFINED_COMM_KEYVALS[number]
        return _keyval_table(number, call).lookup(cls._attr_kind, number, call, freed_ok=freed_ok)

    @classmethod
    def Create_keyval(
        cls,
        copy_fn: Callable[[Any, int, Any], Any] | bool | None = None,
        delete_fn: Callable[[Any, int, Any], None] | None = None,
        nopython: bool = False,
    ) -> int:
        """Create a new attribute key."""
        call = f"{cls._attr_kind}.Create_keyval"
        from .instance import current  # the instance module builds on attributes

        return current(call).keyvals.create(cls._attr_kind, copy_fn, delete_fn, nopython, call)

    @classmethod
    def Free_keyval(cls, keyval: int) -> int:
        """Free an attribute key; returns ``KEYVAL_INVALID``."""
        call = f"{cls._attr_kind}.Free_keyval"
        number = as_keyval(keyval, call)
        if cls._attr_kind == "Comm" and number in PREDEFINED_COMM_KEYVALS:
            raise MPIException(
                ERR_KEYVAL, f"{call}: keyval {number} is predefined and cannot be freed"
            )
        return _keyval_table(number, call).free(cls._attr_kind, number, call)

    def Get_attr(self, keyval: int) -> int | Any | None:
        """Retrieve attribute value by key (None if not set)."""
        call = f"{self._attr_kind}.Get_attr"
        found = self._keyval(keyval, call, freed_ok=True)
        entry = self._attributes(call).get(found.number)
        return None if entry is None else self._attr_value(entry[0], entry[1])

    def _attr_value(self, keyval: Keyval, value: Any) -> Any:
        """What ``Get_attr`` returns for a stored value (a class may compute some live)."""
        return value

    def Set_attr(self, keyval: int, attrval: Any) -> None:
        """Store attribute value associated with a key."""
        call = f"{self._attr_kind}.Set_attr"
        found = self._keyval(keyval, call)
        if found.predefined:
            raise MPIException(
                ERR_KEYVAL, f"{call}: keyval {found.number} is predefined; MPI sets its value"
            )
        attributes = self._attributes(call)
        table = _keyval_table(found.number, call)
        attributes.set(table, found, attrval, self._attr_handle(), call)

    def Delete_attr(self, keyval: int) -> None:
        """Delete attribute value associated with a key."""
        call = f"{self._attr_kind}.Delete_attr"
        found = self._keyval(keyval, call, freed_ok=True)
        if found.predefined:
            raise MPIException(
                ERR_KEYVAL, f"{call}: keyval {found.number} is predefined and cannot be deleted"
            )
        attributes = self._attributes(call)
        table = _keyval_table(found.number, call)
        attributes.delete(table, found, self._attr_handle(), call)
