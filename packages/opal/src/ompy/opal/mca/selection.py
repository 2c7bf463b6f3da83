"""The selection parameter of a framework: ``a,b`` keeps only a and b, ``^a,b`` drops a and b.

Mixing the two forms is ambiguous (does ``a,^b`` mean "only a" or "all but b"?), so, like Open MPI,
we refuse it and say so.
"""

from __future__ import annotations

import attrs

from .errors import SelectionSyntaxError


@attrs.frozen
class Selection:
    """A parsed include or exclude list; an empty include list means "no restriction"."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def parse(cls, names: tuple[str, ...] | str, *, param: str = "selection") -> Selection:
        if isinstance(names, str):
            names = tuple(item.strip() for item in names.split(",") if item.strip())
        if not names:
            return cls()
        negated = [name.startswith("^") for name in names]
        if names[0].startswith("^") and not any(negated[1:]):
            return cls(exclude=(names[0][1:], *names[1:]))
        if not any(negated):
            return cls(include=names)
        if all(negated):
            return cls(exclude=tuple(name[1:] for name in names))
        raise SelectionSyntaxError(
            f"'{param}' mixes included and excluded components ({','.join(names)}); "
            f"write either an include list such as 'a,b' or an exclude list such as '^a,b'"
        )

    def admits(self, name: str) -> bool:
        if self.include:
            return name in self.include
        return name not in self.exclude

    def requested(self, name: str) -> bool:
        """Whether the user asked for this component by name (so its failure is an error)."""
        return name in self.include
