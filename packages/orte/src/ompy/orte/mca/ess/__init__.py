"""The ess framework (environment-specific services): how a process learns who it is.

A rank started by ``ompy run`` reads its identity from the environment the launcher prepared
(component ``env``); a program started on its own is a job of size 1 (component ``singleton``).
Exactly one component runs per process.  Components subclass :class:`EssComponent` and offer an
:class:`EssModule`; :func:`ompy.orte.mca.ess.base.select_module` picks it.

The module's :meth:`EssModule.identity` does the parsing, not the component's ``query``: a rank
whose launcher set the variables wrongly must fail with a message about those variables, not
quietly fall back to being a singleton (a failing ``query`` would just drop the component).

A process started directly by a resource manager (``srun --mpi=pmi2``, component ``pmi``) has
no ``ompy run`` control server: the resource manager's own key-value store carries the modex,
its fence synchronizes, its abort ends the job.  Such a module also offers
:meth:`EssModule.job_services`, the :class:`JobServices` the run-time uses instead of a
connection to a launcher.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from typing import Any, ClassVar

from ompy.opal.mca import Cardinality, Component, Framework, Offer

from .identity import SECRET_SIZE, Identity

__all__ = [
    "INTERFACE_VERSION",
    "SECRET_SIZE",
    "EssComponent",
    "EssModule",
    "Identity",
    "JobServices",
    "framework",
]

INTERFACE_VERSION = (1, 0)


class JobServices(abc.ABC):
    """The job-wide services of a resource manager that launched the ranks itself.

    The run-time's modex rules (``ompy.orte.runtime``) hold unchanged on top of them:
    :meth:`commit` publishes a rank's staged values (a key committed again is replaced),
    :meth:`fence` returns once every rank of the job entered the same fence, and :meth:`get`
    answers from what was committed before the last fence both ranks passed, without waiting.
    """

    @abc.abstractmethod
    def commit(self, data: dict[str, Any]) -> None:
        """Publish this rank's ``data`` (msgpack-able values) to the other ranks."""

    @abc.abstractmethod
    def fence(self) -> None:
        """Wait until every rank of the job has entered this fence."""

    @abc.abstractmethod
    def get(self, rank: int, key: str) -> Any:
        """What ``rank`` committed under ``key``; ``ModexKeyError`` naming both if nothing."""

    @abc.abstractmethod
    def abort(self, code: int, message: str) -> None:
        """Ask the resource manager to end the whole job (the caller then exits)."""

    @abc.abstractmethod
    def finalize(self) -> None:
        """This rank is done with the services (a clean end); idempotent."""


class EssModule(abc.ABC):
    """What a selected ess component provides: this process's identity, maybe job services."""

    @abc.abstractmethod
    def identity(self) -> Identity:
        """Build the identity, raising ``ValueError`` that names what is wrong if it cannot."""

    def job_services(self, identity: Identity) -> JobServices | None:
        """The services of the job ``identity`` belongs to, if this module provides them.

        The default, ``None``, means the usual sources: the control server of ``ompy run``
        for a launched rank, an in-process modex for a singleton.  A module whose identity is
        ``direct`` (started by a resource manager, no control server) must return them.
        """
        return None


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
