"""Framework glue shared by every framework: open, select, close.

:func:`open_framework` turns a :class:`Framework` description into an :class:`OpenFramework`:
components discovered, the admitted ones loaded, their parameters registered and ``open()``
called.  Selection then asks each open component for an offer in a given context.  A component
that fails is recorded (``ompy info`` shows why) and skipped, unless the user asked for it by
name, in which case the failure is an error that says so.

Opening a framework also sets the level of its logger ``ompy.<framework>`` from
``<framework>_base_verbose`` before any component is opened, so every component's
:attr:`~.component.Component.log` speaks at the user's verbosity from ``open()`` on.
"""

from __future__ import annotations

import logging
from typing import Any, Generic

import attrs

from .. import output
from .component import Offer
from .discovery import Candidate, LoadFailure, list_candidates, load_components
from .errors import ComponentLoadError, NoComponentError, SelectionSyntaxError
from .framework import Cardinality, ComponentT, Framework
from .params import ParamValueError, Registry, Resolved
from .selection import Selection


@attrs.define
class OpenFramework(Generic[ComponentT]):
    """A framework with its components loaded and opened in this process.

    ``context`` arguments are what the framework's components' ``query`` takes (its
    ``ContextT``); the offers' modules are of the framework's module type, which the
    framework's own base checks where a third-party component could get it wrong.
    """

    framework: Framework[ComponentT]
    registry: Registry
    selection: Selection
    components: list[ComponentT]
    failures: list[LoadFailure]
    #: The framework's logger, ``ompy.<framework>``, at ``<framework>_base_verbose``.
    log: logging.Logger

    def offers(self, context: Any = None) -> list[tuple[ComponentT, Offer[Any]]]:
        """Every offer for ``context``, best first (priority descending, then name)."""
        offers: list[tuple[ComponentT, Offer[Any]]] = []
        for component in self.components:
            try:
                offer = component.query(context)
            except Exception as error:  # a component bug must not take the framework down
                if self.selection.requested(component.name):
                    raise ComponentLoadError(
                        f"the {self.framework.name} component '{component.name}' was requested "
                        f"but failed while deciding whether to run: {error}"
                    ) from error
                self.failures.append(LoadFailure(component.name, "", f"query failed: {error}"))
                continue
            self.log.debug("%s offers %s", component.name, offer.priority if offer else "nothing")
            if offer is not None:
                offers.append((component, offer))
        offers.sort(key=lambda pair: (-pair[1].priority, pair[0].name))
        return offers

    def select_one(self, context: Any = None) -> tuple[ComponentT, Offer[Any]]:
        """The single best offer (one-of-many frameworks); an error when nobody offers."""
        offers = self.offers(context)
        if not offers:
            raise NoComponentError(self._nobody_offers())
        component, offer = offers[0]
        self.log.info("selected %s (priority %d)", component.name, offer.priority)
        return component, offer

    def select_many(self, context: Any = None) -> list[tuple[ComponentT, Offer[Any]]]:
        """Every offer, best first (many-of-many frameworks); may be empty."""
        return self.offers(context)

    def select(
        self, context: Any = None
    ) -> tuple[ComponentT, Offer[Any]] | list[tuple[ComponentT, Offer[Any]]]:
        """Select according to the framework's cardinality (one pair, or a list of pairs)."""
        if self.framework.cardinality is Cardinality.ONE:
            return self.select_one(context)
        return self.select_many(context)

    def close(self) -> None:
        """Close every component, in reverse order of opening."""
        for component in reversed(self.components):
            component.close()
        self.components.clear()

    def _nobody_offers(self) -> str:
        fw = self.framework.name
        tried = ", ".join(component.name for component in self.components) or "none"
        message = f"no {fw} component is able to run here (components tried: {tried})"
        if self.failures:
            message += "; failed: " + "; ".join(f"{f.name}: {f.reason}" for f in self.failures)
        resolved = self.registry.resolve(fw)
        if resolved.value:
            message += f"; the selection '{fw}' = '{resolved.text}' comes from {resolved.source}"
        return message


def open_framework(
    framework: Framework[ComponentT], registry: Registry, *, everything: bool = False
) -> OpenFramework[ComponentT]:
    """Discover, load and open the components of ``framework`` that its selection admits.

    ``everything`` loads every installed component regardless of the selection: that is what
    ``ompy info`` needs to show all parameters and all load errors.
    """
    framework.register_params(registry)
    log = output.apply_verbosity(
        output.get_logger(framework.name), registry.get(framework.verbose_param)
    )
    resolved = registry.resolve(framework.name)
    try:
        selection = Selection.parse(resolved.value, param=framework.name)
    except SelectionSyntaxError as error:
        raise SelectionSyntaxError(f"{error} (set by {resolved.source})") from None

    candidates, failures = list_candidates(framework.group)
    check_requested_exist(framework, selection, resolved, candidates, failures)
    admitted = [c for c in candidates if everything or selection.admits(c.name)]
    classes, load_failures = load_components(framework, admitted)
    failures.extend(load_failures)

    components: list[ComponentT] = []
    for cls in classes:
        try:
            component = cls(registry)
            component.register_params()
            component.open()
        except ParamValueError:
            # A user's bad value is the user's to fix: skipping the component would make it
            # vanish without a word, so the error (naming parameter, value and source) stands.
            raise
        except Exception as error:
            failures.append(LoadFailure(cls.name, "", f"open failed: {error}"))
        else:
            components.append(component)

    for failure in failures:
        if selection.requested(failure.name):
            raise ComponentLoadError(
                f"the {framework.name} component '{failure.name}' was requested "
                f"('{framework.name}' = '{resolved.text}', from {resolved.source}) "
                f"but cannot be used: {failure.reason}"
            )
    return OpenFramework(framework, registry, selection, components, failures, log)


def open_and_select_one(
    framework: Framework[ComponentT], registry: Registry, context: Any = None
) -> tuple[OpenFramework[ComponentT], ComponentT, Offer[Any]]:
    """Open a one-of-many framework and select its best offer for ``context``.

    The caller owns the returned :class:`OpenFramework` and closes it when the module is no
    longer needed; if selection fails, the framework is closed here before the error propagates.
    """
    opened = open_framework(framework, registry)
    try:
        component, offer = opened.select_one(context)
    except BaseException:
        opened.close()
        raise
    return opened, component, offer


def check_requested_exist(
    framework: Framework[Any],
    selection: Selection,
    resolved: Resolved,
    candidates: list[Candidate],
    failures: list[LoadFailure],
) -> None:
    """Raise :class:`ComponentLoadError` if ``selection`` includes a name nothing installs."""
    known = {c.name for c in candidates} | {f.name for f in failures}
    missing = [name for name in selection.include if name not in known]
    if missing:
        installed = ", ".join(sorted(known)) or "none"
        raise ComponentLoadError(
            f"no {framework.name} component named {', '.join(repr(m) for m in missing)} is "
            f"installed ('{framework.name}' = '{resolved.text}', from {resolved.source}); "
            f"installed {framework.name} components: {installed}"
        )
