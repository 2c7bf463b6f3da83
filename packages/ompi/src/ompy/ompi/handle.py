"""What every MPI handle class shares: construction, comparison, pickling, integer handles.

An mpi4py handle is a small Python object that names an MPI object; two handles are equal when
they name the same object (``MPI.Comm(MPI.COMM_WORLD) == MPI.COMM_WORLD``), and a null handle
(``COMM_NULL``, ``DATATYPE_NULL``, ``GROUP_NULL``, ``OP_NULL``) is false.  Every handle class
follows these rules, so they live here once; a class opts in with
``class Comm(Handle, referent="_c")``, naming the slot that holds what it refers to.  Subclasses
(``Intracomm`` of ``Comm``) compare with their root class.

Construction happens in ``__new__``, as in mpi4py's extension types: ``Comm(comm)`` and
``Comm.__new__(MyComm, comm)`` both give a handle to ``comm``'s object, and ``__init__`` does
nothing, so a subclass's ``__new__`` may choose what its handle refers to (``MyComm(world)``
that refers to a clone of ``world``).  A handle copies every slot of its argument (a request
handle copies its communicator too); a null handle has every slot ``None``.

The predefined objects (``COMM_WORLD``, ``INT``, ``SUM``, ``COMM_NULL``, ...) are registered
with :func:`predefine`: each gets a fixed small integer handle, pickles by name back to the very
same object, and ``free()`` leaves it alone.  Another handle to a predefined object pickles to a
new handle of its own class referring to it (mpi4py's ``__newobj__`` form); a handle to a user
object cannot travel and pickling it raises ``ValueError``.

Integer handles (``handle``, ``toint()``, ``py2f()``) of user objects are numbered on first use
by the process's (default) instance (:class:`HandleTable`), so that ``fromhandle``/``fromint``/
``f2py``, which have no object to ask, find them there; they give a new handle to the object.
The table holds its objects weakly, so it stays as large as the set of live numbered objects.
"""

from __future__ import annotations

import copyreg
import operator
import threading
import weakref
from collections.abc import Callable
from typing import Any, ClassVar, Final, Self, TypeVar

#: The first integer handle given to user objects (predefined ones are numbered below it).
FIRST_USER_HANDLE: Final = 1000


class Handle:
    """Base of the handle classes; ``class Comm(Handle, referent="_c")`` opts in."""

    __slots__ = ("__weakref__",)

    _handle_root: ClassVar[type]
    _referent_slot: ClassVar[str]
    _referent_of: ClassVar[Callable[[Any], object]]
    #: The predefined objects of this root class: (name, handle, number), and number -> handle.
    _predefined: ClassVar[list[tuple[str, Handle, int]]]
    _predefined_numbers: ClassVar[dict[int, Handle]]

    #: The slots a handle of this class has (computed once per class: construction is hot).
    _handle_slots: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, *, referent: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._handle_slots = tuple(_slots(cls))
        if referent is not None:
            cls._handle_root = cls
            cls._referent_slot = referent
            cls._referent_of = staticmethod(operator.attrgetter(referent))
            cls._predefined = []
            cls._predefined_numbers = {}

    # -- construction ------------------------------------------------------------------------

    def __new__(cls, obj: Handle | None = None) -> Self:
        handle = object.__new__(cls)
        if obj is None:
            for slot in cls._handle_slots:
                object.__setattr__(handle, slot, None)
        elif isinstance(obj, cls._handle_root):
            for slot in cls._handle_slots:
                object.__setattr__(handle, slot, getattr(obj, slot, None))
        else:
            root = cls._handle_root.__name__
            article = "an" if root[0] in "AEIOU" else "a"
            raise TypeError(
                f"{cls.__name__}() takes {article} {root} to refer to, not {type(obj).__name__}"
            )
        return handle

    def __init__(self, obj: Handle | None = None) -> None:
        """Nothing to do: ``__new__`` made the handle (so subclasses may pick its object)."""

    # -- comparison ----------------------------------------------------------------------------

    def _referent(self) -> object:
        """What this handle refers to (None for a null handle)."""
        return self._referent_of(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, self._handle_root):
            return NotImplemented
        return self._referent() is other._referent()

    def __ne__(self, other: object) -> bool:
        if not isinstance(other, self._handle_root):
            return NotImplemented
        return self._referent() is not other._referent()

    def __hash__(self) -> int:
        return id(self._referent())

    def __bool__(self) -> bool:
        return self._referent() is not None

    # -- predefined objects ----------------------------------------------------------------------

    def _constant(self) -> bool:
        """Whether this handle is one of the module's predefined handle objects."""
        return any(self is handle for _, handle, _ in self._predefined)

    def _predefined_of(self) -> tuple[str, Handle, int] | None:
        """The name, handle and number of the predefined object this handle refers to."""
        referent = self._referent()
        found = None
        for entry in self._predefined:
            if entry[1] is self:
                return entry
            if found is None and entry[1]._referent() is referent:
                found = entry
        return found

    def __reduce__(self) -> str | tuple[Any, ...]:
        named = self._predefined_of()
        if named is None:
            return self._reduce_user()
        name, handle, _ = named
        if handle is self:
            return (predefined_handle, (self._handle_root, name))
        return (copyreg.__newobj__, (type(self), handle))  # type: ignore[attr-defined]

    def _reduce_user(self) -> str | tuple[Any, ...]:
        """How a handle to a user object pickles: it cannot, unless a class says otherwise."""
        kind = type(self)
        raise ValueError(f"cannot serialize '{kind.__module__}.{kind.__qualname__}' instance")

    # -- integer handles -------------------------------------------------------------------------

    def _instance_for_handles(self) -> Any:
        """The instance this handle's object belongs to, when the process has no default one
        (a loopback rank in a test); the process's instance otherwise."""
        from .instance import current  # the instance module builds on handles

        return current(f"{type(self).__name__}.handle")

    @property
    def handle(self) -> int:
        """MPI handle."""
        named = self._predefined_of()
        if named is not None:
            return named[2]
        from .instance import default  # the instance module builds on handles

        instance = default() or self._instance_for_handles()
        table: HandleTable = instance.handles
        return table.number(self, self._referent())

    @classmethod
    def fromhandle(cls, handle: int) -> Self:
        """Create object from MPI handle."""
        return cls._from_number(handle, f"{cls.__name__}.fromhandle")

    def toint(self) -> int:
        """Translate object to integer handle."""
        return self.handle

    @classmethod
    def fromint(cls, arg: int, /) -> Self:
        """Translate integer handle to object."""
        return cls._from_number(arg, f"{cls.__name__}.fromint")

    def py2f(self) -> int:
        """The Fortran handle (the same integer as ``handle`` and ``toint()`` in ompy)."""
        return self.handle

    @classmethod
    def f2py(cls, arg: int) -> Self:
        """The object of a Fortran handle."""
        return cls._from_number(arg, f"{cls.__name__}.f2py")

    @classmethod
    def _from_number(cls, number: int, call: str) -> Self:
        if isinstance(number, bool) or not isinstance(number, int):
            raise TypeError(f"{call}: a handle is an int, not {type(number).__name__}")
        root = cls._handle_root
        source: Handle | None = cls._predefined_numbers.get(number)
        referent: object = None
        if source is None:
            found = False
            if number >= FIRST_USER_HANDLE:
                from .instance import default  # the instance module builds on handles

                instance = default()
                if instance is not None:
                    found, source, referent = instance.handles.lookup(number, root)
            if not found:
                raise ValueError(f"{call}: no {root.__name__} has handle {number} here")
        if source is not None:
            referent = source._referent()
        kind = cls._class_for(referent)
        handle: Self = Handle.__new__(kind, source)  # type: ignore[assignment]
        if source is None:
            object.__setattr__(handle, cls._referent_slot, referent)
        return handle

    @classmethod
    def _class_for(cls, referent: object) -> type[Self]:
        """The class of a handle made from an integer (``Comm`` makes ``Intracomm`` ones)."""
        return cls

    # -- freeing ---------------------------------------------------------------------------------

    def free(self) -> None:
        """Call ``Free`` if not null or predefined."""
        if self._constant() or not self:
            return
        if self._predefined_of() is not None:  # another handle to a predefined object
            for slot in self._handle_slots:
                object.__setattr__(self, slot, None)
            return
        self._free()

    def _free(self) -> None:
        """What ``free()`` does to a handle of a live user object (each class says)."""
        raise NotImplementedError


def _slots(cls: type) -> list[str]:
    """Every slot a handle of ``cls`` has, from its handle root down (``__weakref__`` aside)."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        for slot in klass.__dict__.get("__slots__", ()):
            if slot not in ("__weakref__", "__dict__") and slot not in names:
                names.append(slot)
    return names


H = TypeVar("H", bound="Handle")


def predefine(handle: H, name: str, number: int) -> H:
    """Register ``handle`` as the predefined object ``name`` with integer handle ``number``.

    Called once per predefined handle where the module makes it; an alias (``MPI.INT_INT`` is
    ``MPI.TWOINT``) registers nothing: one number, and the first name pickles it.
    """
    if not 0 <= number < FIRST_USER_HANDLE:
        raise ValueError(f"predefined handle numbers are 0..{FIRST_USER_HANDLE - 1}, not {number}")
    root = handle._handle_root
    if any(existing is handle for _, existing, _ in root._predefined):
        return handle
    if any(existing == name for existing, _, _ in root._predefined):
        raise ValueError(f"{root.__name__} already has a predefined object called {name}")
    if number in root._predefined_numbers:
        raise ValueError(f"{root.__name__} handle number {number} is taken")
    root._predefined.append((name, handle, number))
    root._predefined_numbers[number] = handle
    return handle


def predefined_handle(root: type[Handle], name: str) -> Handle:
    """The predefined object called ``name`` (what a pickled predefined handle refers to)."""
    for existing, handle, _ in root._predefined:
        if existing == name:
            return handle
    raise ValueError(f"no predefined {root.__name__} is called {name!r}")


class HandleTable:
    """The integer handles of one instance's user objects (``toint``/``fromint``).

    A number is given on first request and kept while its object lives.  Objects that accept
    weak references and make a handle on their own (communicators, datatypes, groups, ...) are
    held weakly and keep their number as long as they exist; for the others (a request and its
    communicator) the table follows the first handle that asked, weakly, and the number lives
    as long as that handle.  Either way
    the table only knows live objects, so its size is bounded by theirs.
    """

    def __init__(self) -> None:
        # Reentrant: a garbage collection inside ``number`` may run a weak reference's
        # callback (``forget``) in the same thread while the lock is held.
        self._lock = threading.RLock()
        self._next = FIRST_USER_HANDLE
        #: number -> (handle class root, weak reference to the object or to a handle of it).
        self._entries: dict[int, tuple[type, weakref.ref[Any]]] = {}
        #: id(object) -> number (removed with the entry).
        self._numbers: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def number(self, handle: Handle, referent: object) -> int:
        """The number of ``referent`` (the object ``handle`` refers to), given if new."""
        key = id(referent)
        with self._lock:
            number = self._numbers.get(key)
            if number is not None and self._target(number) is referent:
                return number
            number = self._next
            self._next += 1
            forget = self._forgetter(number, key)
            entry: weakref.ref[Any] | None = None
            if len(handle._handle_slots) == 1:  # the object alone makes a handle again
                try:
                    entry = weakref.ref(referent, forget)
                except TypeError:  # not weakly referenceable
                    entry = None
            if entry is None:  # follow the handle (it carries more: a request's communicator)
                entry = weakref.ref(handle, forget)
            self._entries[number] = (handle._handle_root, entry)
            self._numbers[key] = number
            return number

    def lookup(self, number: int, root: type) -> tuple[bool, Handle | None, object]:
        """``(found, handle, referent)`` for ``number`` among objects of class ``root``.

        ``handle`` is set when the table follows a handle, ``referent`` otherwise.
        """
        with self._lock:
            kind, entry = self._entries.get(number, (None, None))
        target = entry() if entry is not None else None
        if target is None or kind is not root:
            return False, None, None
        if isinstance(target, Handle):
            return True, target, None
        return True, None, target

    def _target(self, number: int) -> object:
        _, entry = self._entries.get(number, (None, None))
        target = entry() if entry is not None else None
        if isinstance(target, Handle):
            return target._referent()
        return target

    def _forgetter(self, number: int, key: int) -> Callable[[Any], None]:
        table = weakref.ref(self)

        def forget(_dead: Any) -> None:
            this = table()
            if this is None:
                return
            with this._lock:
                this._entries.pop(number, None)
                if this._numbers.get(key) == number:
                    del this._numbers[key]

        return forget
