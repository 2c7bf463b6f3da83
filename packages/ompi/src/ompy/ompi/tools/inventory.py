"""What ``ompy info`` reports: every installed layer, framework, component and parameter.

Taking the inventory opens every framework with every installed component (regardless of the
user's selection), so that all parameters get registered and every load error is seen.  Two kinds
of trouble are kept apart on purpose:

- an *installation* problem (a layer, framework or component that cannot be imported or opened)
  is recorded next to the thing it concerns and shown in place: one broken plug-in must not hide
  everything else;
- a *configuration* problem (a parameter file that cannot be parsed, a value that does not fit its
  parameter, a selection that names a missing component) is the user's to fix, so it stops the
  report with every such message collected in one :class:`ConfigurationError`.
"""

from __future__ import annotations

import attrs

from ompy.opal.layer import Layer
from ompy.opal.mca import (
    ComponentLoadError,
    Framework,
    LoadFailure,
    SelectionSyntaxError,
    installed_frameworks,
    open_framework,
)
from ompy.opal.mca.entry_points import entry_points
from ompy.opal.mca.params import ParamFileError, ParamValueError, Registry, Resolved

#: Bottom layer first, as the layers depend on each other.
LAYER_ORDER = {"opal": 0, "orte": 1, "ompi": 2}
#: The component name under which framework-wide and layer-wide parameters are listed.
BASE = "base"


class ConfigurationError(Exception):
    """The user's settings are wrong; ``messages`` says every problem found, one per entry.

    ``warnings`` holds the unknown-name warnings when they could be worked out: a misspelt name
    often explains why a value is not what the user expected.
    """

    def __init__(self, messages: list[str], warnings: list[str] | None = None) -> None:
        self.messages = messages
        self.warnings = warnings or []
        super().__init__("\n".join(messages))


@attrs.frozen
class LayerEntry:
    """An installed layer, or the entry point of one that could not be loaded (``error``)."""

    name: str
    target: str
    layer: Layer | None = None
    error: str = ""


@attrs.frozen
class ComponentEntry:
    """A component that loaded and opened, and whether the user's selection admits it."""

    framework: str
    name: str
    version: str
    interface_version: tuple[int, int]
    description: str
    admitted: bool


@attrs.frozen
class FrameworkEntry:
    """An installed framework with its components and the components that failed.

    ``error`` is set when the framework itself could not be opened (its own parameters or glue
    are broken); its components are then unknown.
    """

    framework: Framework
    components: list[ComponentEntry] = attrs.Factory(list)
    failures: list[LoadFailure] = attrs.Factory(list)
    error: str = ""


@attrs.frozen
class ParamEntry:
    """One registered parameter with its value and source, filed under group and component.

    ``group`` is the framework name for framework and component parameters, or the prefix of a
    layer-wide parameter (``mpi`` for ``mpi_yield_when_idle``); ``component`` is the component
    name or :data:`BASE` for framework-wide and layer-wide parameters.
    """

    group: str
    component: str
    resolved: Resolved

    @property
    def name(self) -> str:
        return self.resolved.spec.name

    @property
    def level(self) -> int:
        return self.resolved.spec.level


@attrs.frozen
class Inventory:
    """Everything ``ompy info`` can show, taken once per run."""

    layers: list[LayerEntry]
    frameworks: list[FrameworkEntry]
    #: Frameworks whose description could not be loaded at all.
    framework_failures: list[LoadFailure]
    params: list[ParamEntry]
    #: Unknown user-set parameter names, one sentence each (with suggestions).
    warnings: list[str]


def take_inventory(registry: Registry) -> Inventory:
    """Load and open everything installed, register every parameter and resolve its value.

    Raises :class:`ConfigurationError` if the user's settings are wrong anywhere.
    """
    try:
        registry.user_settings()
    except ParamFileError as error:
        raise ConfigurationError([f"cannot read the MCA parameter files: {error}"]) from None
    errors: list[str] = []
    layers = _layers(registry)
    framework_failures: list[LoadFailure] = []
    frameworks = []
    for framework in installed_frameworks(framework_failures):
        entry = _open(framework, registry, errors)
        if entry is not None:
            frameworks.append(entry)
    params = _params(registry, {entry.framework.name for entry in frameworks}, errors)
    if errors:
        raise ConfigurationError(errors, registry.unknown_warnings())
    return Inventory(layers, frameworks, framework_failures, params, registry.unknown_warnings())


def _layers(registry: Registry) -> list[LayerEntry]:
    """Installed layers, each with its layer-wide parameters registered."""
    entries: list[LayerEntry] = []

    for entry_point in entry_points(Layer.ENTRY_POINT_GROUP):
        target = entry_point.value
        try:
            layer = entry_point.load()
        except Exception as error:
            reason = f"{type(error).__name__}: {error}"
            entries.append(LayerEntry(entry_point.name, target, error=reason))
            continue
        if not isinstance(layer, Layer):
            error = f"names {layer!r}, which is not an ompy Layer description"
            entries.append(LayerEntry(entry_point.name, target, error=error))
            continue
        try:
            layer.register_params(registry)
        except Exception as error:  # a layer bug is shown in place, like a component's
            reason = f"registering its parameters failed: {type(error).__name__}: {error}"
            entries.append(LayerEntry(layer.name, target, layer, reason))
        else:
            entries.append(LayerEntry(layer.name, target, layer))
    return sorted(entries, key=lambda entry: (LAYER_ORDER.get(entry.name, 9), entry.name))


def _open(framework: Framework, registry: Registry, errors: list[str]) -> FrameworkEntry | None:
    """Open ``framework`` with every component; ``None`` when the user's settings prevent it."""
    try:
        opened = open_framework(framework, registry, everything=True)
    except (ParamValueError, SelectionSyntaxError, ComponentLoadError) as error:
        errors.append(str(error))
        return None
    except Exception as error:  # the framework's own code is broken: show it, go on
        return FrameworkEntry(framework, error=f"opening failed: {type(error).__name__}: {error}")
    components = [
        ComponentEntry(
            framework.name,
            component.name,
            str(component.version),
            component.interface_version,
            component.description,
            opened.selection.admits(component.name),
        )
        for component in opened.components
    ]
    failures = list(opened.failures)
    for component in reversed(opened.components):
        try:
            component.close()
        except Exception as error:  # report it; the parameters are registered already
            reason = f"close failed: {type(error).__name__}: {error}"
            failures.append(LoadFailure(component.name, "", reason))
    return FrameworkEntry(framework, sorted(components, key=lambda c: c.name), failures)


def _params(registry: Registry, frameworks: set[str], errors: list[str]) -> list[ParamEntry]:
    """Every registered parameter, resolved; a value that does not fit becomes an error."""
    params = []
    for spec in registry.specs():
        try:
            resolved = registry.resolve(spec.name)
        except ParamValueError as error:
            errors.append(str(error))
            continue
        group, component = spec.scope
        if not group or (group not in frameworks and group in LAYER_ORDER):
            # Layer-wide parameters are filed, like Open MPI's, under their name's prefix.
            group = spec.name.split("_", 1)[0]
        params.append(ParamEntry(group, component or BASE, resolved))
    return params
