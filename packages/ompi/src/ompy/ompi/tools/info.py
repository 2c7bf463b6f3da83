"""``ompy info``: what is installed, and how it is configured (Open MPI's ``ompi_info``).

The command is registered in the ``ompy.cli`` entry-point group by ompy-ompi.  All of its
knowledge comes from the entry points of whatever is installed: layers (``ompy.layers``),
frameworks (``ompy.frameworks``) and components (``ompy.mca.<fw>``), so a third-party component
shows up here as soon as it is installed, and a broken one shows up with its error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

import click

from ompy.opal.datatype.arch import Arch, presented, presenting_ranks
from ompy.opal.mca.params import Registry, environment_for_cli, reset_registry
from ompy.opal.mca.params.sources import CLI_NAMES_VAR

from . import parsable as parsable_format
from . import text as text_format
from .inventory import ConfigurationError, take_inventory
from .query import ALL, ParamQuery, QueryError

HELP = """Show the installed ompy layers, MCA frameworks and components, and MCA parameters.

\b
Without options: every installed layer (with its version), every framework (its layer,
cardinality and interface version), every component of each framework (its version, or the
error that keeps it from loading), and this machine's architecture (byte order, long double
format, sizes of the C types behind the predefined datatypes).

\b
  ompy info                        layers, frameworks and components
  ompy info --all                  the same, then every parameter
  ompy info --param shmem          parameters of the shmem framework and its components
  ompy info --param shmem posix    parameters of one component
  ompy info --param shmem base     framework-wide parameters (selection list, shmem_base_*)
  ompy info --param all --level 3  every parameter meant for end users
  ompy info --param mpi            layer-wide parameters filed under their prefix (mpi_*)

Each parameter shows its value and where the value came from: the registered default, a
parameter file (path:line), the environment (OMPY_MCA_<name>) or the command line
(--mca NAME VALUE, here or through 'ompy run').  Info levels: 1-3 end users, 4-6 application
tuners, 7-9 ompy developers.

\b
--parsable prints one 'key:value' line per fact, with stable keys:
  layer:<layer>:version:<v>      layer:<layer>:distribution:<d>
  framework:<fw>:layer:<l>       framework:<fw>:cardinality:one-of-many|many-of-many
  framework:<fw>:interface:<v>   mca:<fw>:<component>:version:<v>
  mca:<fw>:<component>:interface:<v>   mca:<fw>:<component>:admitted:yes|no
  layer:|framework:|mca:<fw>:<component>:error:<reason>
  mca:<fw>:<component>:param:<name>:value|source|type|default|level|help:<...>
  (plus choices|minimum|maximum for restricted parameters; <component> is 'base' for
  framework-wide and layer-wide parameters; source is default, file:<path>:<line>,
  environment:<VAR>, command-line:--mca <name> or override)
  arch:local:byteorder:little|big   arch:local:long_double:<format>
  arch:local:size:<type>:<bytes>    arch:presented:byteorder:little|big
  arch:presented:ranks:all|<rank>,...

Warnings about OMPY_MCA_* names that no installed framework or component knows go to stderr.
A bad parameter value or a malformed parameter file is an error (exit status 1).
"""


@click.command(help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-a", "--all", "show_all", is_flag=True, help="Show everything, including every parameter."
)
@click.option(
    "--param",
    "group",
    metavar="FW",
    help="Show the parameters of framework FW ('all' for every framework), optionally only "
    "those of COMPONENT ('base' for framework-wide ones, 'all' for every component).",
)
@click.argument("component", required=False, metavar="[COMPONENT]")
@click.option(
    "--level",
    type=click.IntRange(1, 9),
    default=9,
    show_default=True,
    help="Show only parameters of info level <= N (1-3 end users, 4-6 tuners, 7-9 developers).",
    metavar="N",
)
@click.option("--parsable", is_flag=True, help="One 'key:value' line per fact, for scripts.")
@click.option(
    "--mca",
    nargs=2,
    multiple=True,
    metavar="NAME VALUE",
    help="Set MCA parameter NAME to VALUE for this report, as 'ompy run --mca' would.",
)
@click.pass_context
def info(
    ctx: click.Context,
    *,
    show_all: bool,
    group: str | None,
    component: str | None,
    level: int,
    parsable: bool,
    mca: tuple[tuple[str, str], ...],
) -> None:
    if component is not None and group is None:
        raise click.UsageError(f"'{component}': a COMPONENT can only follow --param FW")
    if show_all and group is not None:
        raise click.UsageError("--all already shows every parameter; use either --all or --param")
    registry = reset_registry(Registry(environ=_environment(os.environ, mca)) if mca else None)
    try:
        inventory = take_inventory(registry)
    except ConfigurationError as error:
        _warn(error.warnings)
        for message in error.messages:
            click.echo(f"Error: {message}", err=True)
        ctx.exit(1)
    query = ParamQuery(group or ALL, component or ALL, level)
    try:
        query.check(inventory)
    except QueryError as error:
        raise click.BadParameter(str(error), param_hint="'--param'") from None

    render = parsable_format if parsable else text_format
    lines: list[str] = []
    if group is None:
        lines.extend(render.listing(inventory))
        if not parsable:
            lines.append("")
        ranks = presenting_ranks(registry)
        published = presented(registry, ranks[0] if ranks else 0)
        lines.extend(render.architecture(Arch.local(), published, ranks))
    if show_all or group is not None:
        if not parsable:
            if lines:
                lines.append("")
            lines.extend(
                text_format.parameters(query.params(inventory), query.failures(inventory), level)
            )
        else:
            if group is not None:
                lines.extend(parsable_format.failures(query.failures(inventory)))
            lines.extend(parsable_format.parameters(query.params(inventory)))
    click.echo("\n".join(lines))
    _warn(inventory.warnings)


def _environment(environ: Mapping[str, str], mca: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The environment a rank started with ``ompy run --mca ...`` would see."""
    overrides = dict(mca)
    merged = {**environ, **environment_for_cli(overrides)}
    earlier = [name for name in environ.get(CLI_NAMES_VAR, "").split(",") if name]
    merged[CLI_NAMES_VAR] = ",".join(dict.fromkeys([*earlier, *overrides]))
    return merged


def _warn(warnings: list[str]) -> None:
    for warning in warnings:
        click.echo(warning, err=True)
