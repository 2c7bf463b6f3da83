"""The ``ompy`` command group.

Subcommands are entry points in the group ``ompy.cli`` (orte registers ``run``, ompi registers
``info``), loaded only when invoked, so ``ompy run`` never pays for importing ``ompy info``'s
code and a layer that is not installed simply has no subcommand.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from ompy.opal.layer import installed_layers
from ompy.opal.mca.entry_points import entry_points
from ompy.orte.launcher.forkserver.rankmain import FLUSH_FAILED, exit_status

COMMAND_GROUP = "ompy.cli"


class PluginGroup(click.Group):
    """A click group that lists and loads its commands from entry points."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({entry_point.name for entry_point in entry_points(COMMAND_GROUP)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        for entry_point in entry_points(COMMAND_GROUP):
            if entry_point.name == cmd_name:
                try:
                    command: click.Command = entry_point.load()
                except Exception as error:
                    raise click.ClickException(
                        f"the '{entry_point.name}' subcommand ({entry_point.value}) "
                        f"failed to load: {error}"
                    ) from error
                return command
        return None


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    for layer in installed_layers():
        click.echo(f"{layer.distribution} {layer.version}")
    ctx.exit()


@click.group(cls=PluginGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the versions of the installed ompy layers and exit.",
)
def main() -> None:
    """ompy: MPI for Python, following Open MPI's architecture.

    Run a parallel job with 'ompy run -n 4 python app.py'; see what is installed and how it is
    configured with 'ompy info'.
    """


def console() -> NoReturn:
    """The ``ompy`` executable: run the command group, then leave without interpreter teardown.

    Tearing down an interpreter that imported click, attrs and the runtime takes
    20-50 ms (every module and object freed one by one) after the job is already over, and
    nothing is left to do by then: rank output is written unbuffered, files are closed, the
    control server's thread is joined.  So once the command returns, the standard streams are
    flushed and the process ends with ``os._exit``.  Only the installed executable does this;
    ``main`` called from Python (tests, embedding) ends normally.
    """
    try:
        main()  # standalone mode: always ends with SystemExit
        code = 0
    except SystemExit as done:
        code = exit_status(done)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or FLUSH_FAILED  # output lost (closed pipe, full disk), as Python says
    os._exit(code)
