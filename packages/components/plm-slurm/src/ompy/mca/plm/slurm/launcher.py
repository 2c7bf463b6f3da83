"""The ``slurm`` plm module: the daemons of every node, started by one ``srun`` step.

The plm base's daemon module does the rest (the daemon server, spawning ranks through the
daemons, lost daemons, the end of the job).  :meth:`SlurmPlmModule.start_daemons` runs

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
from collections.abc import Mapping, Sequence

from ompy.orte.control import wire
from ompy.orte.daemon.protocol import NodeTree
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.forkserver.deathsig import load_prctl, preexec_die_with_parent
from ompy.orte.launcher.job import Node
from ompy.orte.mca.plm.base.daemon_module import DaemonPlmModule, RecordMaker
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


class SlurmPlmModule(DaemonPlmModule):
    """The plm module of the ``slurm`` component (see the module documentation)."""

    def __init__(
        self,
        *,
        python: str,
        connect_timeout: float,
        launcher_host: str,
        srun: str = "srun",
        srun_args: Sequence[str] = (),
        slurm_names: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__((), python, connect_timeout)
        #: Slurm's name of a node the launcher names otherwise (this host, by its host name).
        self.slurm_names = dict(slurm_names or {})
        self.launcher_host = launcher_host
        self.srun = srun
        self.srun_args = tuple(srun_args)
        self.process: subprocess.Popen[bytes] | None = None

    def check_nodes(self, nodes: Sequence[Node]) -> None:
        if shutil.which(self.srun) is None:
            raise LaunchError(
                f"cannot start daemons in the Slurm allocation: '{self.srun}' was not found on PATH"
            )
        super().check_nodes(nodes)

    def start_daemons(self, daemons: list[Daemon], record: RecordMaker) -> None:
        names = [self.slurm_names.get(daemon.name, daemon.name) for daemon in daemons]
        nodes = {name: daemon.node for name, daemon in zip(names, daemons, strict=True)}
        frame = step_record(record(NodeTree(0, ""), self.launcher_host), nodes)
        argv = srun_argv(self.srun, names, self.python, self.srun_args)
        try:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
                # The hook only calls prctl, getppid and _exit (see deathsig).
                preexec_fn=preexec_die_with_parent(os.getpid(), load_prctl()),  # noqa: PLW1509
            )
        except OSError as error:
            for daemon in daemons:
                daemon.lost = f"srun could not be started ({' '.join(argv[:1])}): {error}"
            return
        assert process.stdin is not None
        try:
            process.stdin.write(wire.encode(frame))
            process.stdin.flush()
        except OSError:
            pass  # srun died at once: its exit status and stderr tell why
        self.process = process
        for daemon in daemons:
            self.watch(daemon, process)
