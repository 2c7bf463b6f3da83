"""``ompy info --parsable``: one ``key:value`` line per fact, for scripts.

The keys are stable (documented in ``ompy info --help`` and docs/architecture.md).  Every line
has a fixed number of colon-separated key fields for its kind, and the value is everything after
them, so a value may itself contain colons (file paths, lists)::

    layer:<layer>:version:<version>
    layer:<layer>:distribution:<distribution>
    layer:<layer>:error:<reason>
    framework:<fw>:layer:<layer>
    framework:<fw>:cardinality:one-of-many|many-of-many
    framework:<fw>:interface:<major>.<minor>
    framework:<fw>:error:<reason>
    mca:<fw>:<component>:version:<version>
    mca:<fw>:<component>:interface:<major>.<minor>
    mca:<fw>:<component>:admitted:yes|no
    mca:<fw>:<component>:error:<reason>
    mca:<group>:<component>:param:<name>:value:<value>
    mca:<group>:<component>:param:<name>:source:<source>
    mca:<group>:<component>:param:<name>:type:bool|int|float|str|list|enum
    mca:<group>:<component>:param:<name>:default:<value>
    mca:<group>:<component>:param:<name>:level:<1-9>
    mca:<group>:<component>:param:<name>:choices:<a>|<b>   (only when restricted)
    mca:<group>:<component>:param:<name>:minimum:<number>  (only when bounded)
    mca:<group>:<component>:param:<name>:maximum:<number>  (only when bounded)
    mca:<group>:<component>:param:<name>:help:<one line of text>
    arch:local:byteorder:little|big
    arch:local:long_double:x87|binary128|binary64|double-double
    arch:local:size:<type>:<bytes>       (<type>: c_short, c_long, ..., aint, f_integer, ...)
    arch:presented:byteorder:little|big  (what peers see: opal_arch_byteorder)
    arch:presented:ranks:all|<rank>,...  (which ranks: opal_arch_byteorder_ranks)

``<source>`` is ``default``, ``file:<path>:<line>``, ``environment:<VAR>``,
``command-line:--mca <name>`` or ``override``.  ``<component>`` is ``base`` for framework-wide
and layer-wide parameters (the selection list, ``<fw>_base_*``, ``mpi_*``), as in Open MPI's
``ompi_info --parsable``.
"""

from __future__ import annotations

from collections.abc import Iterator

from ompy.opal.datatype.arch import SIZE_FIELDS, Arch
from ompy.opal.mca.params import Source, SourceKind

from .inventory import Inventory, ParamEntry
from .query import Failure
from .text import version

_SOURCE_KINDS = {
    SourceKind.DEFAULT: "default",
    SourceKind.FILE: "file",
    SourceKind.ENVIRONMENT: "environment",
    SourceKind.COMMAND_LINE: "command-line",
    SourceKind.OVERRIDE: "override",
}


def one_line(text: str) -> str:
    """Collapse whitespace so a value never spills onto a second line."""
    return " ".join(text.split())


def source(source: Source) -> str:
    kind = _SOURCE_KINDS[source.kind]
    return f"{kind}:{source.where}" if source.where else kind


def listing(inventory: Inventory) -> Iterator[str]:
    for entry in inventory.layers:
        if entry.layer is not None:
            yield f"layer:{entry.name}:version:{entry.layer.version}"
            yield f"layer:{entry.name}:distribution:{entry.layer.distribution}"
        if entry.error:
            yield f"layer:{entry.name}:error:{one_line(entry.error)}"
    for framework in inventory.frameworks:
        fw = framework.framework
        yield f"framework:{fw.name}:layer:{fw.layer}"
        yield f"framework:{fw.name}:cardinality:{fw.cardinality.value}"
        yield f"framework:{fw.name}:interface:{version(fw.interface_version)}"
        if framework.error:
            yield f"framework:{fw.name}:error:{one_line(framework.error)}"
        for component in framework.components:
            prefix = f"mca:{fw.name}:{component.name}"
            yield f"{prefix}:version:{component.version}"
            yield f"{prefix}:interface:{version(component.interface_version)}"
            yield f"{prefix}:admitted:{'yes' if component.admitted else 'no'}"
        for failure in framework.failures:
            yield f"mca:{fw.name}:{failure.name}:error:{one_line(failure.reason)}"
    for failure in sorted(inventory.framework_failures, key=lambda f: f.name):
        yield f"framework:{failure.name}:error:{one_line(failure.reason)}"


def architecture(local: Arch, published: Arch, ranks: tuple[int, ...]) -> Iterator[str]:
    yield f"arch:local:byteorder:{local.byteorder}"
    yield f"arch:local:long_double:{local.long_double.value}"
    for name in SIZE_FIELDS:
        yield f"arch:local:size:{name}:{getattr(local, name)}"
    yield f"arch:presented:byteorder:{published.byteorder}"
    yield f"arch:presented:ranks:{','.join(map(str, ranks)) or 'all'}"


def failures(found: list[Failure]) -> Iterator[str]:
    for item in found:
        yield f"mca:{item.group}:{item.component}:error:{one_line(item.failure.reason)}"


def parameters(params: list[ParamEntry]) -> Iterator[str]:
    for param in params:
        resolved = param.resolved
        spec = resolved.spec
        prefix = f"mca:{param.group}:{param.component}:param:{spec.name}"
        yield f"{prefix}:value:{resolved.text}"
        yield f"{prefix}:source:{source(resolved.source)}"
        yield f"{prefix}:type:{spec.type.value}"
        yield f"{prefix}:default:{spec.type.format(spec.type.coerce(spec.default))}"
        yield f"{prefix}:level:{spec.level}"
        if spec.choices:
            yield f"{prefix}:choices:{'|'.join(spec.choices)}"
        if spec.minimum is not None:
            yield f"{prefix}:minimum:{spec.minimum:g}"
        if spec.maximum is not None:
            yield f"{prefix}:maximum:{spec.maximum:g}"
        yield f"{prefix}:help:{one_line(spec.help)}"
