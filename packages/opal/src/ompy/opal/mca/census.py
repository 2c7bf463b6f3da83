"""Every parameter that anything installed declares, and what the user's settings make of them.

A process registers only the parameters of what it opens, so a misspelt name or a value out of
range for a component that this process does not select would pass unnoticed there and be
ignored or rejected later, per rank.  A tool that wants to judge the user's settings once, up
front (``ompy run`` before it launches anything), takes a census: it registers the parameters
of every installed layer, framework and component, without opening anything, and then checks
each setting the user made against them.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..layer import installed_layers
from .base import check_requested_exist
from .discovery import (
    Candidate,
    LoadFailure,
    installed_frameworks,
    list_candidates,
    load_components,
)
from .errors import MCAError
from .framework import Framework
from .params import ParamError, Registry
from .selection import Selection


@attrs.frozen
class SettingsVerdict:
    """What is wrong with the user's settings: one sentence each."""

    #: Names that nothing installed declares, with the closest known names.
    warnings: list[str]
    #: Values that the parameter they set does not accept.
    errors: list[str]


@attrs.frozen
class Census:
    """What a census found installed: each framework with its components' names."""

    frameworks: list[tuple[Framework[Any], list[Candidate], list[LoadFailure]]]
    #: What could not be loaded (``ompy info`` shows why; a census just skips it).
    failures: list[LoadFailure]


def register_installed_params(registry: Registry) -> Census:
    """Register the parameters of every installed layer, framework and component.

    Components are imported, not opened: no resource is acquired.
    """
    failures: list[LoadFailure] = []
    found = []
    for layer in installed_layers():
        layer.register_params(registry)
    for framework in installed_frameworks(failures):
        framework.register_params(registry)
        candidates, listing_failures = list_candidates(framework.group)
        found.append((framework, candidates, listing_failures))
        classes, load_failures = load_components(framework, candidates)
        failures += listing_failures + load_failures
        for component_class in classes:
            try:
                component_class(registry).register_params()
            except Exception as error:  # a broken component must not stop the census
                name = f"{framework.name} {component_class.name}"
                failures.append(LoadFailure(name, "", f"register_params failed: {error}"))
    return Census(found, failures)


def judge_user_settings(registry: Registry) -> SettingsVerdict:
    """Take a census into ``registry`` and judge every setting the user made.

    Costs an import of every installed component, so callers skip it when the user set
    nothing (``registry.user_settings()`` is empty).
    """
    census = register_installed_params(registry)
    settings = registry.user_settings()
    errors = []
    for name in sorted(settings):
        if name in registry:
            try:
                registry.resolve(name)
            except ParamError as error:
                errors.append(str(error))
    for framework, candidates, failures in census.frameworks:
        if framework.name not in settings:
            continue
        resolved = registry.resolve(framework.name)
        try:
            selection = Selection.parse(resolved.value, param=framework.name)
            check_requested_exist(framework, selection, resolved, candidates, failures)
        except MCAError as error:
            errors.append(str(error))
    return SettingsVerdict(registry.unknown_warnings(), errors)
