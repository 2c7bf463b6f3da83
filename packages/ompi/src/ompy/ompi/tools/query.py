"""Which parameters ``ompy info`` shows: ``--param FW [COMPONENT]`` and ``--level N``.

A query that names something not installed is an error that lists what is installed (with the
closest names first), because a typo must not look like "this framework has no parameters".
"""

from __future__ import annotations

import difflib

import attrs

from ompy.opal.mca import LoadFailure

from .inventory import BASE, Inventory, ParamEntry

ALL = "all"


class QueryError(ValueError):
    """``--param`` names a framework or component that is not installed."""


@attrs.frozen
class Failure:
    """A framework or component failure that falls inside a query, shown in place."""

    group: str
    component: str
    failure: LoadFailure


@attrs.frozen
class ParamQuery:
    """``group`` is a framework (or layer-wide prefix such as ``mpi``) or ``all``; ``component``
    is a component name, ``base`` (framework-wide parameters) or ``all``; parameters whose info
    level is above ``level`` are left out."""

    group: str = ALL
    component: str = ALL
    level: int = 9

    def matches(self, entry: ParamEntry) -> bool:
        return (
            entry.level <= self.level
            and self.group in (ALL, entry.group)
            and self.component in (ALL, entry.component)
        )

    def params(self, inventory: Inventory) -> list[ParamEntry]:
        """The matching parameters, by group, then base before components, then name."""
        chosen = [entry for entry in inventory.params if self.matches(entry)]
        return sorted(chosen, key=lambda e: (e.group, e.component != BASE, e.component, e.name))

    def failures(self, inventory: Inventory) -> list[Failure]:
        """Frameworks and components inside the query that failed, so their absence is explained."""
        found = []
        if self.component in (ALL, BASE):
            for failure in inventory.framework_failures:
                if self.group in (ALL, failure.name):
                    found.append(Failure(failure.name, BASE, failure))
        for entry in inventory.frameworks:
            name = entry.framework.name
            if self.group not in (ALL, name):
                continue
            if entry.error and self.component in (ALL, BASE):
                found.append(Failure(name, BASE, LoadFailure(name, "", entry.error)))
            for failure in entry.failures:
                if self.component in (ALL, failure.name):
                    found.append(Failure(name, failure.name, failure))
        return found

    def check(self, inventory: Inventory) -> None:
        """Raise :class:`QueryError` when the query names something that is not installed."""
        groups = _groups(inventory)
        if self.group != ALL and self.group not in groups:
            raise QueryError(
                f"no framework named '{self.group}' is installed"
                f"{_suggest(self.group, groups)}; installed: {', '.join(sorted(groups))}"
            )
        if self.component == ALL:
            return
        components = set()
        for group, names in groups.items():
            if self.group in (ALL, group):
                components |= names
        if self.component not in components:
            where = "any framework" if self.group == ALL else f"the {self.group} framework"
            raise QueryError(
                f"no component named '{self.component}' is installed in {where}"
                f"{_suggest(self.component, components)}; installed: "
                f"{', '.join(sorted(components))} ('base' selects the framework-wide parameters)"
            )


def _groups(inventory: Inventory) -> dict[str, set[str]]:
    """Every name ``--param`` accepts, with the component names each accepts."""
    groups: dict[str, set[str]] = {}
    for failure in inventory.framework_failures:
        groups.setdefault(failure.name, {BASE})
    for entry in inventory.frameworks:
        names = groups.setdefault(entry.framework.name, {BASE})
        names.update(component.name for component in entry.components)
        names.update(failure.name for failure in entry.failures if failure.name)
    for param in inventory.params:
        groups.setdefault(param.group, {BASE}).add(param.component)
    return groups


def _suggest(word: str, known) -> str:
    close = difflib.get_close_matches(word, sorted(known), n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
