"""The process-wide table of MCA parameters: what code registered, what users set, what wins.

Code registers a :class:`ParamSpec` (name, type, default, help, level, bounds); users set values
by name from any source (see :mod:`.sources`).  A value is resolved the first time it is read and
then cached, so reading a parameter on a hot path costs one dictionary lookup.  A bad value raises
:class:`ParamValueError`, which names the parameter, the value, its source and what was expected.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypedDict

import attrs

from .sources import DEFAULT_SOURCE, Setting, Source, SourceKind, collect_settings
from .types import ParamType

#: Info levels follow Open MPI: 1-3 end users, 4-6 application tuners, 7-9 ompy developers.
MIN_LEVEL, MAX_LEVEL = 1, 9


class ParamError(Exception):
    """Base class of parameter errors."""


class ParamValueError(ParamError, ValueError):
    """A value that does not fit its parameter."""

    def __init__(self, name: str, value: Any, source: Source, expected: str) -> None:
        self.name, self.value, self.source, self.expected = name, value, source, expected
        super().__init__(
            f"MCA parameter '{name}' has the invalid value {value!r} (from {source}): {expected}"
        )


class ParamRegistrationError(ParamError):
    """Code tried to register a parameter inconsistently (a programming error)."""


@attrs.frozen
class ParamSpec:
    """Everything code says about one parameter when it registers it."""

    name: str
    type: ParamType
    default: Any
    help: str
    level: int = 5
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    #: ``(framework, component)`` this parameter belongs to; ``component`` may be ``"base"``;
    #: layer-wide parameters use ``(layer, "")``.
    scope: tuple[str, str] = ("", "")

    def validate(self, raw: Any, source: Source) -> Any:
        """Parse and check one value, raising :class:`ParamValueError` with the full story."""
        try:
            value = self.type.coerce(raw)
        except ValueError as err:
            raise ParamValueError(self.name, raw, source, str(err)) from None
        if self.choices:
            items = value if self.type is ParamType.LIST else (value,)
            wrong = [item for item in items if item not in self.choices]
            if wrong:
                raise ParamValueError(
                    self.name, raw, source, f"expected one of {', '.join(self.choices)}"
                )
        if self.minimum is not None and value < self.minimum:
            raise ParamValueError(self.name, raw, source, f"expected at least {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise ParamValueError(self.name, raw, source, f"expected at most {self.maximum:g}")
        return value

    @property
    def expected(self) -> str:
        """A short description of acceptable values, for help output."""
        parts = [self.type.value]
        if self.choices:
            parts.append("one of " + "|".join(self.choices))
        if self.minimum is not None or self.maximum is not None:
            low = "" if self.minimum is None else f"{self.minimum:g}"
            high = "" if self.maximum is None else f"{self.maximum:g}"
            parts.append(f"range [{low}, {high}]")
        return ", ".join(parts)


@attrs.frozen
class Resolved:
    """A parameter's current value and where it came from."""

    spec: ParamSpec
    value: Any
    source: Source

    @property
    def text(self) -> str:
        return self.spec.type.format(self.value)


class ParamOptions(TypedDict, total=False):
    """The optional part of a declaration (:meth:`Registry.register`'s keywords, defaults there).

    What a component passes on through :meth:`~ompy.opal.mca.Component.register_param`, which
    fixes the rest (the name's prefix and the scope).
    """

    level: int
    minimum: float | None
    maximum: float | None
    choices: Iterable[str]


class Registry:
    """All parameters of this process.

    ``environ`` and ``files`` exist for tests and tools; by default the registry reads the real
    environment and the parameter files once, the first time a value is needed.
    """

    def __init__(
        self, environ: Mapping[str, str] | None = None, files: Iterable[Path] | None = None
    ) -> None:
        self._environ = environ
        self._files = None if files is None else list(files)
        self._specs: dict[str, ParamSpec] = {}
        self._cache: dict[str, Resolved] = {}
        self._settings: dict[str, Setting] | None = None
        self._overrides: dict[str, Setting] = {}

    # -- registration -----------------------------------------------------------------------

    def register(
        self,
        name: str,
        type: ParamType,
        default: Any,
        help: str,
        *,
        level: int = 5,
        minimum: float | None = None,
        maximum: float | None = None,
        choices: Iterable[str] = (),
        scope: tuple[str, str] = ("", ""),
    ) -> ParamSpec:
        """Declare a parameter; registering the same declaration again is harmless."""
        if not (MIN_LEVEL <= level <= MAX_LEVEL):
            raise ParamRegistrationError(f"{name}: level {level} is outside 1..9")
        spec = ParamSpec(name, type, default, help, level, minimum, maximum, tuple(choices), scope)
        try:
            spec.validate(default, DEFAULT_SOURCE)
        except ParamValueError as err:
            raise ParamRegistrationError(f"the default of {err}") from None
        known = self._specs.get(name)
        if known is not None and known != spec:
            raise ParamRegistrationError(
                f"MCA parameter '{name}' is registered twice with different definitions"
            )
        self._specs[name] = spec
        return spec

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    def specs(self) -> Iterator[ParamSpec]:
        """Registered parameters, sorted by name."""
        return iter(sorted(self._specs.values(), key=lambda spec: spec.name))

    # -- values -----------------------------------------------------------------------------

    def get(self, name: str) -> Any:
        """The value of a registered parameter (resolved once, then cached)."""
        resolved = self._cache.get(name)
        if resolved is None:
            resolved = self.resolve(name)
        return resolved.value

    def resolve(self, name: str) -> Resolved:
        """The value of a registered parameter together with its source."""
        resolved = self._cache.get(name)
        if resolved is not None:
            return resolved
        try:
            spec = self._specs[name]
        except KeyError:
            raise ParamError(f"MCA parameter '{name}' is not registered") from None
        setting = self._overrides.get(name) or self.user_settings().get(name)
        if setting is None:
            resolved = Resolved(spec, spec.type.coerce(spec.default), DEFAULT_SOURCE)
        else:
            resolved = Resolved(spec, spec.validate(setting.text, setting.source), setting.source)
        self._cache[name] = resolved
        return resolved

    def set(self, name: str, value: Any) -> None:
        """Override a value from code, above every user source (tests, embedding tools)."""
        text = value if isinstance(value, str) else None
        if text is None:
            spec = self._specs.get(name)
            text = spec.type.format(value) if spec else str(value)
        self._overrides[name] = Setting(name, text, Source(SourceKind.OVERRIDE))
        self._cache.pop(name, None)

    def user_settings(self) -> dict[str, Setting]:
        """Every name a user set, from any source, with the winning setting for each."""
        if self._settings is None:
            environ = os.environ if self._environ is None else self._environ
            self._settings = collect_settings(environ, self._files)
        return self._settings

    def unknown_settings(self) -> list[tuple[Setting, list[str]]]:
        """User-set names that nothing registered, each with the closest known names."""
        unknown = []
        for name, setting in sorted(self.user_settings().items()):
            if name not in self._specs:
                import difflib  # only when warning about an unknown name

                close = difflib.get_close_matches(name, self._specs, n=3, cutoff=0.6)
                unknown.append((setting, close))
        return unknown

    def unknown_warnings(self) -> list[str]:
        """One human sentence per unknown user-set name, for tools to print."""
        lines = []
        for setting, close in self.unknown_settings():
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            lines.append(
                f"warning: MCA parameter '{setting.name}' (from {setting.source}) is not known "
                f"to any installed framework or component{hint}"
            )
        return lines
