"""From the command line to a job that is ready to start: the launcher's decisions before launch.

:func:`plan_job` validates everything that can be checked before a process is started: MCA
values, hosts and slots (ras), the mapping and oversubscription, the reachability of the hosts
(plm), the program and the working directory, and ``-x`` variables.  Any problem is a
:class:`~.errors.LaunchError` raised while nothing is running yet.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import attrs

from ompy.orte.control.environment import BINDING

from .errors import LaunchError
from .hosts import is_local_host, usable_cores
from .job import Allocation, AppContext, JobMap
from .mapping import map_ranks
from .program import resolve_program
from .report import Reporter

#: Identity variables of an enclosing job, never inherited by a new job's ranks.
_INHERITED_JOB_VARS = ("OMPY_MCA_CLI_NAMES",)
_MCA_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class RunOptions:
    """Everything ``ompy run`` was told, before any checking."""

    program: tuple[str, ...]
    np: int | None = None
    hosts: tuple[str, ...] = ()
    hostfile: Path | None = None
    map_by: str = "slot"
    #: ``--bind-to``; None: the ``orte_bind_to`` parameter decides.
    bind_to: str | None = None
    #: ``None``: allowed with a warning; ``True``: allowed silently; ``False``: an error.
    oversubscribe: bool | None = None
    mca: tuple[tuple[str, str], ...] = ()
    exports: tuple[str, ...] = ()
    tag_output: bool = False
    timestamp_output: bool = False
    output_dir: Path | None = None
    wdir: Path | None = None
    timeout: float | None = None
    quiet: bool = False
    verbose: bool = False


@attrs.frozen
class Plan:
    """A checked job: where every rank runs, what it runs, with which environment."""

    options: RunOptions
    allocation: Allocation
    job_map: JobMap
    app: AppContext
    #: The launcher's own environment plus ``--mca`` (command-line sourced), as seen by ranks.
    mca_env: dict[str, str]


def mca_overrides(pairs: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """``--mca`` pairs as a dict; a name given twice keeps the last value, like Open MPI."""
    overrides: dict[str, str] = {}
    for name, value in pairs:
        if not _MCA_NAME.fullmatch(name):
            raise LaunchError(
                f"--mca {name} {value}: {name!r} is not a parameter name "
                f"(letters, digits and underscores, e.g. btl_tcp_if_include)",
                2,
            )
        overrides[name] = value
    return overrides


def export_variables(exports: tuple[str, ...], environ: Mapping[str, str]) -> dict[str, str]:
    """``-x VAR`` (the launcher's value) and ``-x VAR=VALUE`` as a dict."""
    exported: dict[str, str] = {}
    for item in exports:
        name, sep, value = item.partition("=")
        if not _VAR_NAME.fullmatch(name):
            raise LaunchError(f"-x {item}: {name!r} is not an environment variable name", 2)
        if not sep:
            if name not in environ:
                raise LaunchError(
                    f"-x {name}: {name} is not set in the environment of ompy run; "
                    f"set it, or give a value with -x {name}=VALUE",
                    2,
                )
            value = environ[name]
        exported[name] = value
    return exported


def working_directory(wdir: Path | None) -> Path:
    if wdir is None:
        return Path.cwd()
    path = wdir.expanduser()
    if not path.is_dir():
        raise LaunchError(f"--wdir {wdir}: no such directory", 2)
    return path.resolve()


def plan_job(options: RunOptions, registry, reporter: Reporter) -> Plan:
    """Check the options and work out the job (see the module documentation)."""
    from ompy.orte.mca.ras import AllocationRequest
    from ompy.orte.mca.ras.base import allocate

    allocation = allocate(registry, AllocationRequest(options.hosts, options.hostfile))
    reporter.note(
        "allocation from "
        + allocation.source
        + ": "
        + ", ".join(f"{n.name} ({n.slots} slots)" for n in allocation.nodes)
    )
    size = options.np if options.np is not None else allocation.total_slots
    cores = usable_cores() if all(is_local_host(n.name) for n in allocation.nodes) else None
    job_map = map_ranks(size, allocation, options.map_by, cores=cores)
    _check_oversubscription(options, allocation, job_map, reporter)

    cwd = working_directory(options.wdir)
    exported = export_variables(options.exports, os.environ)
    base_env = {k: v for k, v in os.environ.items() if k not in _INHERITED_JOB_VARS}
    base_env.update(exported)
    argv = resolve_program(options.program, cwd, base_env)
    from ompy.opal.mca.params import environment_for_cli

    mca_env = environment_for_cli(mca_overrides(options.mca))
    # Each node's rank starter binds the ranks it starts (ompy.opal.binding) by this policy.
    binding = {BINDING: options.bind_to or str(registry.get("orte_bind_to"))}
    app = AppContext(argv, cwd, {**exported, **mca_env, **binding})
    return Plan(options, allocation, job_map, app, mca_env)


def _check_oversubscription(
    options: RunOptions, allocation: Allocation, job_map: JobMap, reporter: Reporter
) -> None:
    if not job_map.oversubscribed:
        return
    what = f"{job_map.size} ranks on {allocation.total_slots} slots ({allocation.source})"
    if options.oversubscribe is False:
        raise LaunchError(
            f"not enough slots: {what}, and --no-oversubscribe forbids running more ranks "
            f"than slots; lower -n, add slots (--host name:slots) or drop --no-oversubscribe"
        )
    if options.oversubscribe is None:
        reporter.warn(
            f"oversubscribing: {what}; ranks will share cores and yield when idle "
            f"(--oversubscribe silences this warning)"
        )
