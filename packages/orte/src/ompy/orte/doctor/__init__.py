"""``ompy doctor``: a preflight of the hosts a job will span, step by step, naming what fails.

:mod:`.checks` runs the steps from the launcher's host; :mod:`.agent` is what runs on each
checked host (``python -m ompy.orte.doctor.agent``), with the interpreter the job's daemons will
use.  The doctor reads the settings ``ompy run`` reads, raw, from ``--mca`` and the environment
(it does not load the plm or btl components to do so, so the defaults of the parameters below
are repeated here and must follow theirs):

==========================  =============================================================
``plm_ssh_agent``           the remote shell, as words (default ``ssh``)
``plm_ssh_python``          the remote interpreter (default: this process's interpreter)
``plm_ssh_launcher_host``   the address daemons connect back to (default: ssh's client)
``btl_tcp_if_include``      the interfaces probed between hosts (names or networks)
``btl_tcp_if_exclude``      ... or those left out
``btl_tcp_if_bridges``      whether bridges count (default false)
==========================  =============================================================
"""

from __future__ import annotations

import shlex
import sys

from ompy.opal.mca.params import Registry

from .checks import Finding, Settings, diagnose

__all__ = ["Finding", "Settings", "diagnose", "settings_from"]

_TRUE = {"1", "true", "yes", "on", "y"}
_FALSE = {"0", "false", "no", "off", "n", ""}


def settings_from(registry: Registry, *, step_timeout: float, probe_timeout: float) -> Settings:
    """The doctor's :class:`Settings` from the user's raw MCA settings (see the module doc)."""
    raw = {name: setting.text for name, setting in registry.user_settings().items()}

    def words(name: str) -> tuple[str, ...]:
        return tuple(w.strip() for w in raw.get(name, "").split(",") if w.strip())

    bridges_text = raw.get("btl_tcp_if_bridges", "").strip().lower()
    if bridges_text not in _TRUE | _FALSE:
        raise ValueError(
            f"btl_tcp_if_bridges = {bridges_text!r} is not a boolean (true/false, 1/0, yes/no)"
        )
    agent = tuple(shlex.split(raw.get("plm_ssh_agent", "ssh")))
    if not agent:
        raise ValueError("plm_ssh_agent is empty: it must name the remote shell (e.g. ssh)")
    return Settings(
        agent=agent,
        python=raw.get("plm_ssh_python", "") or sys.executable,
        launcher_host=raw.get("plm_ssh_launcher_host", ""),
        include=words("btl_tcp_if_include"),
        exclude=words("btl_tcp_if_exclude"),
        bridges=bridges_text in _TRUE,
        step_timeout=step_timeout,
        probe_timeout=probe_timeout,
    )
