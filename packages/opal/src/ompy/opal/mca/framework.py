"""Frameworks: one functional domain, one interface, any number of installed components.

A :class:`Framework` is a small static description that each layer publishes in the entry-point
group ``ompy.frameworks``, so tools such as ``ompy info`` find every framework of whatever layers
are installed.  Opening it (:func:`open_framework`) discovers its components, loads only the ones
the selection parameter admits, and gives back an :class:`OpenFramework` that selects modules.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar, Generic, TypeVar

import attrs

from .component import Component
from .params import ParamType, Registry

#: The component class of a framework (``BtlComponent`` for btl), carried by the type of its
#: :class:`Framework` so that opening and selecting give components of that class.
ComponentT = TypeVar("ComponentT", bound=Component[Any, Any])
DeclaredT = TypeVar("DeclaredT", bound=Component[Any, Any])


class Cardinality(enum.Enum):
    """How many components a framework keeps running at once."""

    #: Exactly one: the highest priority offer (ties broken by name), e.g. pml, plm, shmem.
    ONE = "one-of-many"
    #: Every component that offers, ordered by priority, e.g. btl, coll.
    MANY = "many-of-many"


@attrs.frozen
class Framework(Generic[ComponentT]):
    """The description of one framework.

    ``interface_version`` is the version of the component interface that this release of the
    owning layer provides; components declare the version they implement and a different major
    version is refused at load time.  The type parameter is the framework's component class.

    A framework package declares its description with :meth:`of`, from its component base
    class, which already states the framework's name and interface version (every component
    inherits them): ``framework = Framework.of(BtlComponent, "opal", Cardinality.MANY, "...")``.
    """

    name: str
    layer: str
    description: str
    interface_version: tuple[int, int]
    cardinality: Cardinality

    ENTRY_POINT_GROUP: ClassVar[str] = "ompy.frameworks"

    @classmethod
    def of(
        cls, component: type[DeclaredT], layer: str, cardinality: Cardinality, description: str
    ) -> Framework[DeclaredT]:
        """The framework whose components derive from ``component``, its base class.

        The name and the interface version are read from that class (its ``framework`` and
        ``interface_version``), so they are written once, where components inherit them, and
        the description can never name another framework or version than its components do.
        """
        return Framework(
            component.framework, layer, description, component.interface_version, cardinality
        )

    @property
    def group(self) -> str:
        """Entry-point group in which this framework's components are registered."""
        return f"ompy.mca.{self.name}"

    @property
    def verbose_param(self) -> str:
        """``<name>_base_verbose``: the verbosity of this framework's logger ``ompy.<name>``."""
        return f"{self.name}_base_verbose"

    def register_params(self, registry: Registry) -> None:
        """Register the framework-wide parameters: its selection list and its verbosity."""
        registry.register(
            self.name,
            ParamType.LIST,
            (),
            f"Components of the {self.name} framework to use: an include list ('a,b') or an "
            f"exclude list ('^a,b'); empty means every installed component may run",
            level=2,
            scope=(self.name, ""),
        )
        registry.register(
            self.verbose_param,
            ParamType.INT,
            0,
            f"Verbosity of the {self.name} framework and its components (logger "
            f"ompy.{self.name}), on Open MPI's 0-100 scale: 0 warnings and errors only, 1-19 "
            "what is selected, 20-100 every component's reasoning and set-up too",
            level=8,
            minimum=0,
            maximum=100,
            scope=(self.name, "base"),
        )
