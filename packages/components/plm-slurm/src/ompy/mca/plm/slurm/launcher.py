"""The ``slurm`` plm module: the daemons of every node, started by one ``srun`` step.

The plm base's daemon module (:mod:`ompy.orte.mca.plm.base.daemon_plm`) does the rest (the
daemon server, spawning ranks through the daemons, lost daemons, the end of the job).  The
daemon of this host's node too is started by the step, not directly, so that Slurm tracks every
daemon and rank of the job alike.  :meth:`SlurmPlmModule.start_daemons` runs

    srun --nodes=N --ntasks=N --ntasks-per-node=1 --nodelist=<the job's nodes>
         --input=all --mpi=none --cpu-bind=none --overlap --kill-on-bad-exit=1 --quiet
         <python> -m ompy.mca.plm.slurm.node_daemon

and writes the step's record (:mod:`.record`) to srun's standard input, which srun copies to
every daemon and keeps open: closing it (the launcher ending, or dying) ends the daemons and
their ranks.  srun runs in its own session and dies with the launcher.  Slurm counts the
daemons' ranks as part of the step, so they end with it too, and ``scancel`` reaches them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence

import attrs

from ompy.orte.control import wire
from ompy.orte.daemon.protocol import LaunchInfo, NodeTree
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.forkserver.deathsig import load_prctl, preexec_die_with_parent
from ompy.orte.launcher.job import Node
from ompy.orte.mca.plm.base.daemon_plm import DaemonPlmModule, DaemonSettings
from ompy.orte.mca.plm.base.daemons import Daemon

from .record import step_record

DAEMON_MODULE = "ompy.mca.plm.slurm.node_daemon"


def srun_argv(srun: str, names: Sequence[str], python: str, extra: Sequence[str] = ()) -> list[str]:
    """The srun command that starts one daemon on each of ``names``."""
    count = len(names)
    return [
        srun,
        f"--nodes={count}",
        f"--ntasks={count}",
        "--ntasks-per-node=1",
        f"--nodelist={','.join(names)}",
        "--input=all",
        "--mpi=none",
        "--cpu-bind=none",
        "--overlap",
        "--kill-on-bad-exit=1",
        "--quiet",
        *extra,
        python,
        "-m",
        DAEMON_MODULE,
    ]


@attrs.frozen
class SlurmSettings(DaemonSettings):
    """The component's parameters, read once."""

    #: The srun program.
    srun: str = "srun"
    #: More srun options for the daemons' step.
    srun_args: tuple[str, ...] = ()
    #: Slurm's name of a node the launcher names otherwise (this host, by its host name).
    slurm_names: Mapping[str, str] = attrs.field(factory=dict)


class SlurmPlmModule(DaemonPlmModule):
    """The plm module of the ``slurm`` component (see the module documentation)."""

    settings: SlurmSettings

    def __init__(self, settings: SlurmSettings) -> None:
        super().__init__(settings)
        self._local: list[Daemon] = []
        self.process: subprocess.Popen[bytes] | None = None

    def check_nodes(self, nodes: Sequence[Node]) -> None:
        if shutil.which(self.settings.srun) is None:
            raise LaunchError(
                f"cannot start daemons in the Slurm allocation: '{self.settings.srun}' was "
                f"not found on PATH"
            )
        super().check_nodes(nodes)

    def start_local(self, daemon: Daemon, info: LaunchInfo) -> None:
        """This host's daemon joins the others in the srun step (started next)."""
        self._local.append(daemon)

    def start_daemons(
        self, daemons: Sequence[Daemon], info: Callable[[NodeTree, str], LaunchInfo]
    ) -> None:
        group = [*self._local, *daemons]
        names = [self.settings.slurm_names.get(d.name, d.name) for d in group]
        nodes = {name: daemon.node for name, daemon in zip(names, group, strict=True)}
        frame = step_record(info(NodeTree(0, ""), self.settings.launcher_host), nodes)
        argv = srun_argv(self.settings.srun, names, self.settings.python, self.settings.srun_args)

        def start() -> subprocess.Popen[bytes]:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
                # The hook only calls prctl, getppid and _exit (see deathsig).
                preexec_fn=preexec_die_with_parent(os.getpid(), load_prctl()),  # noqa: PLW1509
            )
            assert process.stdin is not None
            try:
                process.stdin.write(wire.encode(frame))
                process.stdin.flush()
            except OSError:
                pass  # srun died at once: its exit status and stderr tell why
            self.process = process
            return process

        self.watch(group, start)
