"""Choosing the osc component of each window.

Each instance (``Instance.osc``) has one :class:`OscSelection`: the framework is opened when
the program creates its first window and stays open until ``MPI.Finalize``.  Every window
asks it for a new module (:meth:`OscSelection.module`); since ``Win.Create`` & co. are
collective and every process opens the same components with the same parameters, every
process of a window selects the same component, as long as the components' offers depend only
on what the query says (flavor, communicator, hints), which the interface requires.
"""

from __future__ import annotations

import threading

from ompy.opal.mca import NoComponentError, OpenFramework, open_framework
from ompy.opal.mca.params import Registry

from ....errors import ERR_WIN
from ....errors import Exception as MPIException
from .. import framework
from ..interface import FLAVOR_NAMES, OscComponent, OscModule, OscQuery


class OscSelection:
    """The osc framework of one instance, opened on first use."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._lock = threading.Lock()
        self._opened: OpenFramework[OscComponent] | None = None

    def _framework(self) -> OpenFramework[OscComponent]:
        with self._lock:
            if self._opened is None:
                self._opened = open_framework(framework, self.registry)
                for component in self._opened.components:
                    self._opened.log.info("%s is open", component.name)
            return self._opened

    def module(self, query: OscQuery) -> OscModule:
        """A new module of the best component for the window ``query`` describes.

        Raises ``MPI.Exception`` (``ERR_WIN``) naming what was tried when no component offers.
        """
        opened = self._framework()
        try:
            component, offer = opened.select_one(query)
        except NoComponentError as error:
            raise MPIException(
                ERR_WIN,
                f"cannot create a window of flavor '{FLAVOR_NAMES[query.flavor]}': {error}; "
                "install ompy-osc-pt2pt, which serves every window",
            ) from None
        module = offer.module
        if not isinstance(module, OscModule):
            raise MPIException(
                ERR_WIN,
                f"the osc component '{component.name}' offered a {type(module).__name__}, "
                "which is not an OscModule",
            )
        module.component = component.name
        opened.log.debug("window of flavor %s served by %s", query.flavor, component.name)
        return module

    def opened(self) -> OpenFramework[OscComponent] | None:
        """The open framework, or ``None`` before the first window."""
        return self._opened

    def finalize(self) -> None:
        """Close the framework at ``MPI.Finalize``; calling it again does nothing."""
        with self._lock:
            opened, self._opened = self._opened, None
        if opened is not None:
            opened.log.info("closing the osc components")
            opened.close()
