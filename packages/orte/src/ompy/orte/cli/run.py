"""``ompy run``: start a parallel job, like Open MPI's ``mpirun``.

Only click and the launcher's option record are imported at start-up; everything else loads
when the job is planned, so ``ompy run`` starts as fast as the ranks allow.  The options'
spellings and arity come from :mod:`.run_options`, which the fork server's early scanner reads
too; here each option gets its type, default and help.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ompy.opal.binding import POLICIES
from ompy.orte.launcher.plan import RunOptions

from .run_options import BY_DEST

EPILOG = """\b
Exit codes: 0 when every rank exited with 0; otherwise the code of the first
rank that failed (128 + N when it was killed by signal N; the error code of
abort; the code of a sys.exit called before the other ranks reached Finalize,
0 included; 1 for a rank that exited with 0 without finalizing), 128 + N when
the fork server was killed by signal N, 130 after Ctrl-C, 128 + N when ompy
run received SIGTERM or SIGHUP (forwarded to every rank), 124 when --timeout
expired, 127/126 when the program was not found / is not executable, 1 or 2
for invalid options.

\b
Signals: Ctrl-C (SIGINT) terminates the job (SIGTERM, then SIGKILL after
orte_abort_timeout seconds; a second Ctrl-C kills at once). SIGTERM and
SIGHUP are forwarded to every rank's process group. SIGUSR1 prints the Python
stack of every running rank and the job goes on
(kill -USR1 <pid of ompy run>).

\b
--output-filename DIR writes rank N's output to DIR/1/rank.N/stdout and
DIR/1/rank.N/stderr instead of the terminal. Standard input goes to rank 0;
the other ranks read /dev/null.
"""


def option(dest: str, **settings):
    """The click option of ``ompy run`` that fills ``dest``, spelled as :mod:`.run_options` says."""
    declared = BY_DEST[dest]
    if declared.negations:  # an on/off flag: click spells it "--on/--off"
        names = [f"{on}/{off}" for on, off in zip(declared.names, declared.negations, strict=True)]
    else:
        names = list(declared.names)
    if declared.values == 0 and not declared.negations:
        settings["is_flag"] = True
    elif declared.values == 2:
        settings["nargs"] = 2
    return click.option(*names, dest, **settings)


@click.command(
    context_settings={
        "allow_interspersed_args": False,
        "help_option_names": ["-h", "--help"],
    },
    epilog=EPILOG,
)
@option(
    "np",
    type=click.IntRange(min=1),
    metavar="N",
    help="Number of ranks (default: the number of slots, e.g. one per core).",
)
@option(
    "hosts",
    multiple=True,
    metavar="HOST[:SLOTS],...",
    help="Hosts to run on, with their slot counts (e.g. localhost:4). Repeatable.",
)
@option(
    "hostfile",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="A file of hosts, one per line: 'name [slots=N]', '#' comments.",
)
@option(
    "map_by",
    type=click.Choice(["slot", "node"]),
    default="slot",
    show_default=True,
    help="Fill each host's slots before the next (slot) or deal ranks round-robin (node).",
)
@option(
    "bind_to",
    type=click.Choice(POLICIES),
    default=None,
    help="Bind each rank to a core, a package (socket) or nothing [default: auto, a core per "
    "rank where a node runs at most two ranks, else a package; the orte_bind_to parameter].",
)
@option(
    "oversubscribe",
    default=None,
    help="Allow more ranks than slots without the warning / make it an error.",
)
@option(
    "mca",
    multiple=True,
    metavar="NAME VALUE",
    help="Set an MCA parameter in the launcher and every rank. Repeatable.",
)
@option(
    "exports",
    multiple=True,
    metavar="VAR[=VALUE]",
    help="Export an environment variable to the ranks (with a value, or the current one).",
)
@option("tag_output", help="Prefix each line with [jobid,rank]<stream>:.")
@option("timestamp_output", help="Prefix each line with its time.")
@option(
    "output_dir",
    type=click.Path(path_type=Path, file_okay=False),
    metavar="DIR",
    help="Write each rank's output to DIR/1/rank.N/{stdout,stderr}.",
)
@option(
    "wdir",
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Working directory of the ranks (default: the current one).",
)
@option(
    "timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Print every rank's stack and end the job (exit 124) after this long.",
)
@option("quiet", help="Suppress warnings (errors still show).")
@option("verbose", help="Explain what the launcher does.")
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED)
def run(program: tuple[str, ...], **options) -> None:
    """Run PROGRAM [ARGS...] as a parallel job.

    PROGRAM is any executable; a script ending in .py, or a bare 'python', runs
    under the Python interpreter that runs ompy.

    \b
    Examples:
      ompy run -n 4 python app.py
      ompy run -n 4 app.py --size 100
      ompy run -n 2 --tag-output --mca btl self,tcp hostname
    """
    from ompy.orte.launcher.errors import LaunchError
    from ompy.orte.launcher.report import Reporter
    from ompy.orte.launcher.start import run_job

    run_options = RunOptions(program=program, **options)
    reporter = Reporter(quiet=run_options.quiet, verbose=run_options.verbose)
    try:
        code = run_job(run_options, reporter)
    except LaunchError as error:
        reporter.error(str(error))
        code = error.exit_code
    except Exception as error:
        # MCA errors (bad values, unknown components) name the parameter and its source.
        if not _is_user_error(error):
            raise
        reporter.error(str(error))
        code = 1
    sys.exit(code)


def _is_user_error(error: BaseException) -> bool:
    from ompy.opal.mca import MCAError
    from ompy.opal.mca.params import ParamError

    return isinstance(error, (MCAError, ParamError))
