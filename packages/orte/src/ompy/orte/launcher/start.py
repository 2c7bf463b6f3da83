"""``ompy run`` end to end, minus the command-line parsing: configure, plan, select, run.

Kept apart from the click command so that tests and embedding tools can start a job from
Python with a :class:`~.plan.RunOptions`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .plan import RunOptions, mca_overrides, plan_job
from .report import Reporter

if TYPE_CHECKING:
    from ompy.opal.mca import OpenFramework


def launcher_registry(overrides: dict[str, str]):
    """The launcher's parameter registry: its environment plus ``--mca`` as command-line values.

    The launcher reads its own parameters (``orte_abort_timeout``, ``plm``, ...) exactly as
    the ranks will, with ``--mca`` winning over the environment and files.
    """
    from ompy.opal.mca.params import Registry, environment_for_cli, reset_registry
    from ompy.orte.layer import register_params

    environ = {k: v for k, v in os.environ.items() if k != "OMPY_MCA_CLI_NAMES"}
    environ.update(environment_for_cli(overrides))
    registry = reset_registry(Registry(environ=environ))
    register_params(registry)
    return registry


def judge_settings(registry, reporter: Reporter) -> None:
    """Judge every MCA setting the user made, once, before anything is launched.

    Unknown names get one warning each (with the closest known names); a value that its
    parameter does not accept is an error, even for a component no rank will select, so a
    mistake is one message from here rather than a traceback from every rank or silence.
    The census imports every installed component, so it only runs when the user set
    something.
    """
    from ompy.opal.mca.census import judge_user_settings
    from ompy.opal.mca.params import ParamError

    if not registry.user_settings():
        return
    verdict = judge_user_settings(registry)
    for warning in verdict.warnings:
        reporter.warn(warning.removeprefix("warning: "))
    if verdict.errors:
        raise ParamError("; ".join(verdict.errors))


def run_job(options: RunOptions, reporter: Reporter) -> int:
    """Run the job described by ``options``; return ompy run's exit code.

    Raises :class:`~.errors.LaunchError`, or an MCA error, when the job cannot start.
    """
    from ompy.orte.mca.errmgr.base import select_errmgr
    from ompy.orte.mca.iof import IofOptions
    from ompy.orte.mca.iof.base import select_iof
    from ompy.orte.mca.plm.base import select_plm

    from .forkserver.early import discard_early
    from .runner import JobRunner, rank_base_environment
    from .session import new_jobid

    overrides = mca_overrides(options.mca)
    registry = launcher_registry(overrides)
    judge_settings(registry, reporter)
    plan = plan_job(options, registry, reporter)
    opened: list[OpenFramework[Any]] = []
    plm = None
    try:
        plm_fw, plm = select_plm(registry, plan.allocation.nodes)
        opened.append(plm_fw)
        plm.check_nodes(plan.allocation.nodes)
        plm.forward_environment(plan.app.env)
        # As early as possible: a helper the plm starts here works while the launcher sets up.
        plm.prepare(plan.app.argv, rank_base_environment(plan.app.env), plan.app.cwd)
        discard_early()  # a fork server started on a guess that the plm did not take
        errmgr_fw, errmgr = select_errmgr(registry)
        opened.append(errmgr_fw)
        jobid = new_jobid()
        iof_options = IofOptions(
            jobid,
            plan.job_map.size,
            tag_output=options.tag_output,
            timestamp_output=options.timestamp_output,
            output_dir=options.output_dir,
        )
        iof_fw, iof = select_iof(registry, iof_options)
        opened.append(iof_fw)
        runner = JobRunner(
            plan,
            registry,
            reporter,
            plm=plm,
            iof=iof,
            errmgr=errmgr,
            jobid=jobid,
        )
        return runner.run()
    finally:
        discard_early()
        if plm is not None:
            plm.finish()
        for framework in reversed(opened):
            framework.close()
