"""Finding components: names from installed metadata first, code only for what is selected.

Listing entry points reads package metadata (:mod:`.entry_points` caches it across processes,
so a warm start imports no metadata machinery), so an excluded component is never imported: a
broken or slow plug-in costs nothing unless it is wanted.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from typing import Any, cast

import attrs

from .component import Component
from .entry_points import EntryPoint, entry_points
from .errors import ComponentVersionError
from .framework import ComponentT, Framework


@attrs.frozen
class Candidate:
    """An installed component, known by its entry point but not necessarily imported."""

    name: str
    target: str


@attrs.frozen
class LoadFailure:
    """A component that could not be used, and why (shown by ``ompy info``)."""

    name: str
    target: str
    reason: str


def _failure(entry_point: EntryPoint, error: BaseException) -> LoadFailure:
    """How a failure to import an entry point's target is shown (``ompy info``, selection)."""
    return LoadFailure(entry_point.name, entry_point.value, f"{type(error).__name__}: {error}")


def _load_all(group: str, failures: list[LoadFailure]) -> list[tuple[EntryPoint, Any]]:
    """Load every entry point of ``group``; those that fail to load go to ``failures``."""
    loaded: list[tuple[EntryPoint, Any]] = []
    for entry_point in entry_points(group):
        try:
            loaded.append((entry_point, entry_point.load()))
        except Exception as error:
            failures.append(_failure(entry_point, error))
    return loaded


def list_candidates(group: str) -> tuple[list[Candidate], list[LoadFailure]]:
    """Installed components of a group; a name claimed by two targets is a failure for both."""
    targets: dict[str, set[str]] = defaultdict(set)
    for entry_point in entry_points(group):
        targets[entry_point.name].add(entry_point.value)
    candidates: list[Candidate] = []
    failures: list[LoadFailure] = []
    for name in sorted(targets):
        found = sorted(targets[name])
        if len(found) == 1:
            candidates.append(Candidate(name, found[0]))
        else:
            reason = (
                f"the name '{name}' is registered by more than one package ({', '.join(found)}); "
                f"uninstall all but one"
            )
            failures.append(LoadFailure(name, " | ".join(found), reason))
    return candidates, failures


def load_components(
    framework: Framework[ComponentT], candidates: list[Candidate]
) -> tuple[list[type[ComponentT]], list[LoadFailure]]:
    """Import the given components and check that they fit the framework's interface."""
    failures: list[LoadFailure] = []

    loaded: list[type[ComponentT]] = []
    for candidate in sorted(candidates, key=lambda candidate: candidate.name):
        entry_point = EntryPoint(candidate.name, candidate.target, framework.group)
        try:
            plugin = entry_point.load()
        except Exception as error:
            failures.append(_failure(entry_point, error))
            continue
        try:
            check_component_class(framework, candidate.name, plugin)
        except ComponentVersionError as error:
            failures.append(LoadFailure(candidate.name, candidate.target, str(error)))
        else:
            # A component class that declares this framework's name: the framework's own
            # component class (its interface) is the one such classes derive from.
            loaded.append(cast("type[ComponentT]", plugin))
    return loaded, failures


def check_component_class(framework: Framework[Any], name: str, plugin: object) -> None:
    """Refuse anything that is not a component of this framework at a compatible version."""
    if not (isinstance(plugin, type) and issubclass(plugin, Component)):
        raise ComponentVersionError(
            f"entry point '{name}' of {framework.group} names {plugin!r}, "
            f"which is not an ompy component class"
        )
    declared = ("framework", "name", "version", "interface_version")
    missing = [attribute for attribute in declared if not hasattr(plugin, attribute)]
    if missing:
        raise ComponentVersionError(
            f"the component class {plugin.__module__}.{plugin.__qualname__} (entry point "
            f"'{name}' of {framework.group}) does not set {', '.join(missing)}; every component "
            f"class declares {', '.join(declared)}"
        )
    if plugin.framework != framework.name or plugin.name != name:
        raise ComponentVersionError(
            f"entry point '{name}' of {framework.group} names the component "
            f"'{plugin.framework}/{plugin.name}'; the entry point name and the component's "
            f"framework and name must match"
        )
    wanted_major = framework.interface_version[0]
    got = plugin.interface_version
    if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(n, int) for n in got)):
        raise ComponentVersionError(
            f"the {framework.name} component '{name}' declares interface_version {got!r}; "
            f"expected a (major, minor) tuple of ints such as {framework.interface_version!r}"
        )
    if got[0] != wanted_major:
        raise ComponentVersionError(
            f"the {framework.name} component '{name}' implements interface version "
            f"{got[0]}.{got[1]}, but this installation's {framework.name} framework provides "
            f"version {wanted_major}.x; install a release of the component built for it"
        )


def installed_frameworks(failures: list[LoadFailure] | None = None) -> list[Framework[Any]]:
    """Every framework that the installed layers publish, sorted by layer order then name.

    A framework whose description cannot be loaded (a half-installed layer, an entry point naming
    a module that does not exist, or an object that is not a :class:`Framework`) is left out and
    appended to ``failures``, so that ``ompy info`` can show it in place; without a ``failures``
    list it is reported as a :class:`RuntimeWarning`.  Either way one broken framework never
    takes every other framework, or the tool listing them, down with it.
    """
    found: list[LoadFailure] = []

    frameworks: list[Framework[Any]] = []
    for entry_point, plugin in _load_all(Framework.ENTRY_POINT_GROUP, found):
        if isinstance(plugin, Framework):
            frameworks.append(plugin)
        else:
            reason = f"names {plugin!r}, which is not an ompy Framework description"
            found.append(LoadFailure(entry_point.name, entry_point.value, reason))
    if failures is not None:
        failures.extend(found)
    else:
        for failure in found:
            warnings.warn(
                f"the framework '{failure.name}' ({failure.target}) cannot be loaded: "
                f"{failure.reason}",
                RuntimeWarning,
                stacklevel=2,
            )
    order = {"opal": 0, "orte": 1, "ompi": 2}
    return sorted(frameworks, key=lambda fw: (order.get(fw.layer, 9), fw.name))
