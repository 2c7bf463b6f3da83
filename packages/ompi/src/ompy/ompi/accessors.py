"""Properties that are views of a getter method (and a setter), as mpi4py's handles have them.

mpi4py gives most ``Get_x``/``Set_x`` pairs a property ``x`` that calls them: ``comm.size`` is
``comm.Get_size()``, ``comm.name = "a"`` is ``comm.Set_name("a")``.  Declared here once, from
the methods themselves (``size = GetProperty(Get_size, "Number of processes.")`` in the class
body, after ``Get_size``), instead of a small property function per name that calls them.

The methods are looked up by name on each access, as ``self.Get_size()`` would: a subclass's
override is seen, and so are the error-handler wrappers that ``install_dispatch`` puts on the
methods of the handle classes (an error in ``comm.size`` runs the communicator's handler, as one
in ``comm.Get_size()`` does).  What this module adds is their types: a checker sees
``comm.size`` as the getter's result type, and assignments checked against the setter (or
refused, without one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Never, Self, TypeVar, overload

_Obj = TypeVar("_Obj")
_Value = TypeVar("_Value")


class GetProperty(property, Generic[_Obj, _Value]):
    """A read-only property whose value is ``getter(obj)``."""

    def __init__(self, getter: Callable[[_Obj], _Value], doc: str) -> None:
        super().__init__(_getting(getter.__name__), None, None, doc)
        self.__doc__ = doc  # a property subclass keeps its docstring only on the instance

    if TYPE_CHECKING:  # the types a checker sees; at run time property's own (C) methods work

        @overload
        def __get__(self, obj: None, owner: type | None = None, /) -> Self: ...
        @overload
        def __get__(self, obj: _Obj, owner: type | None = None, /) -> _Value: ...
        def __get__(self, obj: Any, owner: type | None = None, /) -> Any: ...
        def __set__(self, obj: Any, value: Never, /) -> None: ...  # read-only: no value fits


class GetSetProperty(GetProperty[_Obj, _Value]):
    """A property whose value is ``getter(obj)`` and whose assignment is ``setter(obj, value)``."""

    def __init__(
        self, getter: Callable[[_Obj], _Value], setter: Callable[[_Obj, _Value], None], doc: str
    ) -> None:
        property.__init__(self, _getting(getter.__name__), _setting(setter.__name__), None, doc)
        self.__doc__ = doc

    if TYPE_CHECKING:

        def __set__(self, obj: _Obj, value: _Value, /) -> None: ...


def _getting(name: str) -> Callable[[Any], Any]:
    """A function returning ``obj.<name>()``."""

    def get(obj: Any) -> Any:
        return getattr(obj, name)()

    get.__name__ = name
    return get


def _setting(name: str) -> Callable[[Any, Any], None]:
    """A function calling ``obj.<name>(value)``."""

    def set_(obj: Any, value: Any) -> None:
        getattr(obj, name)(value)

    set_.__name__ = name
    return set_
