"""``ompy info`` for people: an indented listing that reads top-down, layer to parameter."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

from ompy.opal.datatype.arch import Arch

from .inventory import BASE, FrameworkEntry, Inventory, ParamEntry
from .query import Failure

WIDTH = 100


def version(numbers: tuple[int, int]) -> str:
    return ".".join(str(number) for number in numbers)


def listing(inventory: Inventory) -> Iterator[str]:
    """Layers, then frameworks with their components (and what failed to load, in place)."""
    yield "Layers:"
    for entry in inventory.layers:
        if entry.layer is None:
            yield f"  {entry.name}: ERROR: cannot be loaded ({entry.target}): {entry.error}"
            continue
        layer = entry.layer
        yield f"  {layer.name} {layer.version} ({layer.distribution}): {layer.description}"
        if entry.error:
            yield f"      ERROR: {entry.error}"
    yield ""
    yield "Frameworks and their components:"
    for framework in inventory.frameworks:
        yield from _framework(framework)
    for failure in sorted(inventory.framework_failures, key=lambda f: f.name):
        yield f"  {failure.name}: ERROR: cannot be loaded ({failure.target}): {failure.reason}"


def architecture(local: Arch, published: Arch, ranks: tuple[int, ...]) -> Iterator[str]:
    """This machine's representation of the C types, and what the ranks present to peers
    (``ranks``: those ``opal_arch_byteorder`` applies to, empty for all)."""
    yield "Architecture:"
    facts = local.describe()
    for fact, value in facts[:2]:
        yield f"  {fact}: {value}"
    sizes = ", ".join(f"{fact} {value}" for fact, value in facts[2:])
    yield from textwrap.wrap(
        f"sizes in bytes: {sizes}", WIDTH, initial_indent="  ", subsequent_indent="    "
    )
    if published != local:
        who = "every rank" if not ranks else "rank " + ",".join(map(str, ranks))
        yield (
            f"  presented to peers: {published.byteorder}-endian by {who} "
            f"(opal_arch_byteorder; typed data is converted on the way in and out)"
        )


def _framework(entry: FrameworkEntry) -> Iterator[str]:
    fw = entry.framework
    yield (
        f"  {fw.name} ({fw.layer} layer, {fw.cardinality.value}, "
        f"interface {version(fw.interface_version)}): {fw.description}"
    )
    if entry.error:
        yield f"      ERROR: {entry.error}"
        return
    if not entry.components and not entry.failures:
        yield "      (no components installed)"
    for component in entry.components:
        line = (
            f"      {component.name} {component.version} "
            f"(interface {version(component.interface_version)})"
        )
        if component.description:
            line += f": {component.description}"
        if not component.admitted:
            line += f" [not admitted by the '{fw.name}' selection]"
        yield line
    for failure in entry.failures:
        yield "      " + _failure_text(failure.name, failure.target, failure.reason)


def _failure_text(name: str, target: str, reason: str) -> str:
    where = f" ({target})" if target else ""
    return f"{name}: ERROR{where}: {reason}"


def parameters(params: list[ParamEntry], failures: list[Failure], level: int) -> Iterator[str]:
    """Each parameter with its value, source, type, default, level and help, grouped."""
    yield f"Parameters (info level <= {level}):"
    if not params and not failures:
        yield "  (none)"
    heading = None
    for failure in failures:
        label = (
            failure.group if failure.component == BASE else (f"{failure.group} {failure.component}")
        )
        yield f"  MCA {label}: ERROR (its parameters are unknown): {failure.failure.reason}"
    for param in params:
        if (param.group, param.component) != heading:
            heading = (param.group, param.component)
            yield f"  MCA {param.group} {param.component}:"
        yield from _param(param)


def _param(param: ParamEntry) -> Iterator[str]:
    resolved = param.resolved
    spec = resolved.spec
    value = resolved.text if resolved.text else '""'
    default = spec.type.format(spec.type.coerce(spec.default)) or '""'
    yield f"    {spec.name} = {value}"
    yield f"        source: {resolved.source}"
    yield f"        type: {spec.expected}; default: {default}; level: {spec.level}"
    yield from textwrap.wrap(
        " ".join(spec.help.split()),
        WIDTH,
        initial_indent=" " * 8,
        subsequent_indent=" " * 8,
    )
