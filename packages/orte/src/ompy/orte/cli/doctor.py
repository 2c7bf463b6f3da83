"""``ompy doctor``: check hosts before running a job across them (see :mod:`ompy.orte.doctor`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--host",
    "hosts",
    multiple=True,
    metavar="HOST[:SLOTS],...",
    help="Hosts to check, as for ompy run (slot counts are ignored). Repeatable.",
)
@click.option(
    "--hostfile",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="A host file, as for ompy run.",
)
@click.option(
    "--mca",
    nargs=2,
    multiple=True,
    metavar="NAME VALUE",
    help="An MCA parameter, as for ompy run (plm_ssh_agent, plm_ssh_python, "
    "plm_ssh_launcher_host, btl_tcp_if_include/if_exclude/if_bridges are used).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds each step may take on a host.",
)
@click.option(
    "--probe-timeout",
    type=click.FloatRange(min=0.1),
    default=3.0,
    show_default=True,
    help="Seconds a connect between two hosts' interfaces may take.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object per finding instead of text."
)
def doctor(
    *,
    hosts: tuple[str, ...],
    hostfile: Path | None,
    mca: tuple[tuple[str, str], ...],
    timeout: float,
    probe_timeout: float,
    as_json: bool,
) -> None:
    """Check that a job can run across HOSTS: ssh, interpreter, ompy, connect-back, interfaces.

    Each host is checked step by step the way ompy run will use it; a failure names the host
    and the step, and skips that host's later steps. Exit status 0 when every step passed on
    every host, 1 otherwise, 2 for bad options.

    \b
    Example:
      ompy doctor --host node1,node2 --mca plm_ssh_agent "ssh -F ~/.ssh/cluster"
    """
    from ompy.opal.layer import installed_layers
    from ompy.orte.doctor import settings_from
    from ompy.orte.doctor.checks import diagnose
    from ompy.orte.launcher.errors import LaunchError
    from ompy.orte.launcher.plan import mca_overrides
    from ompy.orte.launcher.start import launcher_registry
    from ompy.orte.mca.ras import AllocationRequest
    from ompy.orte.mca.ras.base import allocate

    if not hosts and not hostfile:
        raise click.UsageError("name the hosts to check with --host or --hostfile")
    try:
        registry = launcher_registry(mca_overrides(mca))
        allocation = allocate(registry, AllocationRequest(hosts, hostfile))
        settings = settings_from(registry, step_timeout=timeout, probe_timeout=probe_timeout)
    except (LaunchError, ValueError) as error:
        raise click.UsageError(str(error)) from None
    names = [node.name for node in allocation.nodes]
    local_layers = {layer.name: layer.version for layer in installed_layers()}
    if not as_json:
        click.echo(
            f"ompy doctor: checking {', '.join(names)} (agent: {' '.join(settings.agent)}, "
            f"interpreter: {settings.python})"
        )
    width = max(len(name) for name in names)

    def show(finding) -> None:
        if as_json:
            record = {
                "host": finding.host,
                "step": finding.step,
                "status": finding.status,
                "detail": finding.detail,
            }
            click.echo(json.dumps(record))
        else:
            status = finding.status.upper() if not finding.ok else "ok"
            click.echo(
                f"{finding.host:<{width}}  {finding.step:<12}  {status:<7}  {finding.detail}"
            )

    findings = diagnose(names, settings, local_layers, progress=show)
    failed = [f for f in findings if f.status == "failed"]
    if not as_json:
        if failed:
            click.echo(
                "ompy doctor: " + "; ".join(f"{f.host} failed at step {f.step}" for f in failed),
                err=True,
            )
        else:
            click.echo(f"ompy doctor: all {len(names)} host(s) passed every step")
    sys.exit(1 if failed else 0)
