"""MCA parameters: typed, documented settings that users change without touching code.

Use :func:`registry` for the process-wide table.  Frameworks and components register their
parameters through it (usually via :meth:`Component.register_param`) and read values with
``registry().get(name)``.
"""

from __future__ import annotations

from .registry import (
    ParamError,
    ParamOptions,
    ParamRegistrationError,
    ParamSpec,
    ParamValueError,
    Registry,
    Resolved,
)
from .sources import ParamFileError, Setting, Source, SourceKind, environment_for_cli
from .types import ParamType

__all__ = [
    "ParamError",
    "ParamFileError",
    "ParamOptions",
    "ParamRegistrationError",
    "ParamSpec",
    "ParamType",
    "ParamValueError",
    "Registry",
    "Resolved",
    "Setting",
    "Source",
    "SourceKind",
    "environment_for_cli",
    "registry",
    "reset_registry",
]

_registry: Registry | None = None


def registry() -> Registry:
    """The parameter registry of this process."""
    global _registry
    if _registry is None:
        _registry = Registry()
    return _registry


def reset_registry(new: Registry | None = None) -> Registry:
    """Replace the process registry (tests, or a tool that re-reads its environment)."""
    global _registry
    _registry = new if new is not None else Registry()
    return _registry
