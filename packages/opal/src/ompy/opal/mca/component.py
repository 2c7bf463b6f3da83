"""The component interface every MCA plug-in implements, whatever its framework.

A component class is what an entry point in the group ``ompy.mca.<framework>`` names.  The core
instantiates it once per process and drives its lifecycle::

    register_params(registry) -> open() -> query(context) -> [modules do the work] -> close()

``query`` answers "do you want to run here, and how much?" with an :class:`Offer` (a priority
and the module that will do the work), or ``None`` to stay out.  Framework interfaces subclass
:class:`Component` with the two types of their contract filled in, what ``query`` is asked
about and what its offer carries (``BtlComponent(Component[BtlContext, list[BtlModule]])``), and
add what their components must provide.

Every component speaks through :attr:`Component.log`, its logger ``ompy.<framework>.<name>``
(see :mod:`ompy.opal.output`); the framework sets its verbosity from ``<framework>_base_verbose``
before ``open()``.
"""

from __future__ import annotations

import abc
import functools
import logging
from typing import Any, ClassVar, Generic, TypeVar, Unpack

import attrs

from .. import output
from .params import ParamOptions, ParamSpec, ParamType, Registry

ModuleT = TypeVar("ModuleT")
#: An offer of a module of a subclass is an offer of the base module (``Offer`` is read-only).
OfferedT_co = TypeVar("OfferedT_co", covariant=True)
#: What a framework hands to ``query`` (a context object; ``None`` where the choice is per process).
ContextT = TypeVar("ContextT")


@attrs.frozen
class Offer(Generic[OfferedT_co]):
    """A component's answer to ``query``: its priority here and the module it would run."""

    priority: int
    module: OfferedT_co


class Component(abc.ABC, Generic[ContextT, ModuleT]):
    """Base class of all components.

    ``ContextT`` is what the framework asks ``query`` about, ``ModuleT`` what an offer carries;
    each framework's component class fixes both.  Subclasses set the class attributes below.
    ``version`` is the component's own release (shown by ``ompy info``); ``interface_version``
    is the version of the framework interface it was written against: a different major
    version is refused when the component is loaded.

    An abstract base: a framework declares what its components must provide as abstract
    methods (an incomplete component fails when it is opened, naming what it lacks), and what
    they may provide as ordinary methods with a documented default.
    """

    framework: ClassVar[str]
    name: ClassVar[str]
    version: ClassVar[str]
    interface_version: ClassVar[tuple[int, int]]
    description: ClassVar[str] = ""
    #: Priority used when the user does not set ``<framework>_<name>_priority``.
    default_priority: ClassVar[int] = 0

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    @classmethod
    def preload(cls) -> None:
        """Prepare process state that processes forked from this one inherit; once, optional.

        A fork server calls it after importing the component and before forking any rank,
        in a process with no run-time, no parameters and, as a rule, one thread.  It must not
        depend on a rank or leave threads, sockets or open files behind (the ``ompy.preload``
        contract); what it may do is warm per-process state that costs more once a rank runs
        (a registration that is cheap while single-threaded).  The default does nothing.
        """

    # -- lifecycle ----------------------------------------------------------------------------

    def register_params(self) -> None:
        """Declare this component's parameters; subclasses extend, calling ``super()``."""
        self.register_param(
            "priority",
            ParamType.INT,
            self.default_priority,
            f"Priority of the {self.framework} component '{self.name}' "
            "(higher wins when several want to run)",
            level=6,
        )

    def open(self) -> None:
        """Acquire process-wide resources; raise to take the component out of the running."""

    def query(self, context: ContextT) -> Offer[ModuleT] | None:
        """Return an offer to run in ``context``, or ``None`` to stay out (the default)."""
        return None

    def close(self) -> None:
        """Release what ``open`` acquired."""

    # -- services -----------------------------------------------------------------------------

    @functools.cached_property
    def log(self) -> logging.Logger:
        """This component's logger, ``ompy.<framework>.<name>``: the one way it prints.

        Its level follows ``<framework>_base_verbose``, set by the framework before
        :meth:`open` (see :mod:`ompy.opal.output` for the scale).  On a hot path, test a bool
        computed once (``self.log.isEnabledFor(logging.DEBUG)``) before calling it.
        """
        return output.get_logger(self.framework, self.name)

    # -- helpers ------------------------------------------------------------------------------

    def register_param(
        self, name: str, type: ParamType, default: Any, help: str, **options: Unpack[ParamOptions]
    ) -> ParamSpec:
        """Register ``<framework>_<component>_<name>``; ``default`` is of the type ``type`` says.

        ``options`` are :meth:`Registry.register`'s (``level``, ``minimum``, ``maximum``,
        ``choices``); the scope is this component's.
        """
        return self.registry.register(
            self.param_name(name),
            type,
            default,
            help,
            scope=(self.framework, self.name),
            **options,
        )

    def param(self, name: str) -> Any:
        """The value of this component's parameter ``name`` (of the type it was registered with)."""
        return self.registry.get(self.param_name(name))

    def param_name(self, name: str) -> str:
        return f"{self.framework}_{self.name}_{name}"

    @property
    def priority(self) -> int:
        """The priority in force: the user's ``<framework>_<name>_priority`` or the default."""
        return self.param("priority")

    def __repr__(self) -> str:
        return f"<{self.framework} component {self.name} {self.version}>"
