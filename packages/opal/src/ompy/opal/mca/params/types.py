"""The value types an MCA parameter can have, and how each is parsed from text.

Every user-facing source (command line, environment, parameter file) hands us strings, so each
type owns one parser that either returns a Python value or raises :class:`ValueError` with a
sentence saying what was expected.  The registry adds the parameter name and the source.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

_TRUE = frozenset({"1", "true", "yes", "on", "y", "t"})
_FALSE = frozenset({"0", "false", "no", "off", "n", "f", ""})


def _parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError("expected a boolean (1/0, true/false, yes/no, on/off)")


def _parse_int(text: str) -> int:
    try:
        return int(text.strip(), 0)
    except ValueError:
        raise ValueError("expected an integer (decimal, or 0x/0o/0b prefixed)") from None


def _parse_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise ValueError("expected a number") from None


def _parse_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


class ParamType(enum.Enum):
    """The type of a parameter; its value is the parser that turns user text into a value."""

    BOOL = "bool"
    INT = "int"
    FLOAT = "float"
    STR = "str"
    LIST = "list"
    ENUM = "enum"

    def parse(self, text: str) -> Any:
        """Turn user text into a value of this type (choices are checked by the registry)."""
        return _PARSERS[self](text)

    def coerce(self, value: Any) -> Any:
        """Accept either text or an already typed Python value (defaults, programmatic sets)."""
        if isinstance(value, str):
            return self.parse(value)
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if self is ParamType.BOOL and isinstance(value, bool):
            return value
        if self is ParamType.INT and is_number and float(value).is_integer():
            return int(value)
        if self is ParamType.FLOAT and is_number:
            return float(value)
        if self is ParamType.LIST and isinstance(value, (list, tuple)):
            return tuple(str(item) for item in value)
        raise ValueError(f"expected a {self.value}, got {type(value).__name__} {value!r}")

    def format(self, value: Any) -> str:
        """Render a value the way a user would type it back in."""
        if self is ParamType.BOOL:
            return "true" if value else "false"
        if self is ParamType.LIST:
            return ",".join(value)
        return str(value)


_PARSERS: dict[ParamType, Callable[[str], Any]] = {
    ParamType.BOOL: _parse_bool,
    ParamType.INT: _parse_int,
    ParamType.FLOAT: _parse_float,
    ParamType.STR: str,
    ParamType.LIST: _parse_list,
    ParamType.ENUM: lambda text: text.strip(),
}
