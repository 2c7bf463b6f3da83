"""The per-node daemon (``ompy daemon``), Open MPI's orted: one per node of a multi-node job.

A remote-launch plm (``ssh``) starts one daemon per node of the allocation, directly or through
a tree of daemons (:mod:`.tree`).  The daemon reads its :class:`~.protocol.LaunchInfo` from its
standard input (never from the command line: it holds the launch secret), connects back to the
launcher, proves that it knows the secret, and then serves the launcher's requests over that
one connection (:mod:`.protocol`): it forks its node's ranks (each in its own session, dying
with the daemon), forwards their stdout and stderr (and rank 0's stdin), relays signals and
reports exits.  A daemon that loses its launcher (the connection or its standard input ends)
kills its ranks and exits, so nothing outlives the job.

Modules: :mod:`.protocol` (messages and the launch record), :mod:`.tree` (who starts whom),
:mod:`.agent` (starting a daemon through a remote shell), :mod:`.node` (the daemon itself),
:mod:`.relay` (its ranks' control connections and the node's fences), :mod:`.main` (the
``ompy daemon`` command).  The launcher's side is the plm framework's daemon base,
:mod:`ompy.orte.mca.plm.base.daemon_plm`.
"""
