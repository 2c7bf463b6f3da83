"""The fork server: one warm interpreter that forks every rank of a Python job.

Starting a Python rank costs an interpreter start and the imports of numpy, ompy and the
components, paid once per rank.  The fork server pays them once per job: the launcher starts
it as soon as it knows the job runs this interpreter on Python code, it imports what the
ranks need (the ``ompy.preload`` entry points of the installed layers, see
:mod:`ompy.orte.launcher.preload`), and forks each rank from that state.

* :mod:`.pycommand` decides which command lines qualify (``python -c/-m/SCRIPT``);
* :mod:`.client` is the launcher's side (start it, ask for ranks, learn their exits);
* :mod:`.zygote` is the server process, :mod:`.rankmain` what a forked child runs;
* :mod:`.early` starts the server before the launcher has even parsed its command line;
* :mod:`.wire` and :mod:`.deathsig` are their shared plumbing.

The plm ``local`` component decides whether to use it (``plm_local_fork_server``); it lives
in the run-time layer because the launcher starts it before any component is loaded.  This
package imports nothing at import time, so the server and the early start stay cheap.
"""
