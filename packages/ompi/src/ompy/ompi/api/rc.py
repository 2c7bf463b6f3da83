"""Run-time configuration read when ``ompy.MPI`` is imported, like ``mpi4py.rc``.

Set attributes before the first ``from ompy import MPI``::

    from ompy.ompi.api import rc
    rc.initialize = False   # do not call MPI.Init on import; the program calls it
    rc.finalize = False     # do not call MPI.Finalize at exit

The environment variables ``OMPY_RC_INITIALIZE`` and ``OMPY_RC_FINALIZE`` (``0``/``1``,
``false``/``true``, ``no``/``yes``) set the defaults, as ``MPI4PY_RC_*`` do for mpi4py.
``thread_level`` is the level ``MPI.Init_thread`` requests on import.
"""

from __future__ import annotations

import os

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _flag(name: str, default: bool) -> bool:
    text = os.environ.get(name)
    if text is None:
        return default
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}={text!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


#: Call ``MPI.Init_thread`` when ``ompy.MPI`` is imported.
initialize: bool = _flag("OMPY_RC_INITIALIZE", True)
#: Call ``MPI.Finalize`` at exit (when MPI was initialized and not finalized by the program).
finalize: bool = _flag("OMPY_RC_FINALIZE", True)
#: The thread level requested on import: "single", "funneled", "serialized" or "multiple".
thread_level: str = os.environ.get("OMPY_RC_THREAD_LEVEL", "multiple")
