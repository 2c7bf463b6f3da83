"""The ess framework (environment-specific services): how a process learns who it is.

A rank started by ``ompy run`` reads its identity from the environment the launcher prepared
(component ``env``); a program started on its own is a job of size 1 (component ``singleton``).
Exactly one component runs per process.  Components subclass :class:`EssComponent` and offer an
:class:`EssModule`; :func:`ompy.orte.mca.ess.base.select_module` picks it.

The module's :meth:`EssModule.identity` does the parsing, not the component's ``query``: a rank
whose launcher set the variables wrongly must fail with a message about those variables, not
quietly fall back to being a singleton (a failing ``query`` would just drop the component).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import ClassVar

from ompy.opal.mca import Cardinality, Component, Framework, Offer

from .identity import SECRET_SIZE, Identity

__all__ = [
    "INTERFACE_VERSION",
    "SECRET_SIZE",
    "EssComponent",
    "EssModule",
    "Identity",
    "framework",
]

INTERFACE_VERSION = (1, 0)


class EssModule(abc.ABC):
    """What a selected ess component provides: this process's identity (its whole contract)."""

    @abc.abstractmethod
    def identity(self) -> Identity:
        """Build the identity, raising ``ValueError`` that names what is wrong if it cannot."""


class EssComponent(Component[Mapping[str, str] | None, EssModule]):
    """Base class of ess components.

    ``query`` receives the environment to inspect (a mapping of variable names to values);
    ``None`` means ``os.environ``.  Passing a mapping lets tests and tools ask "who would a
    process with this environment be?" without touching the real environment.
    """

    framework: ClassVar[str] = "ess"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: Mapping[str, str] | None) -> Offer[EssModule] | None:
        """Offer a module if this component can tell who the process is; see the class doc."""
        return None


framework = Framework.of(
    EssComponent,
    "orte",
    Cardinality.ONE,
    "environment-specific services: the identity of this process in its job",
)
