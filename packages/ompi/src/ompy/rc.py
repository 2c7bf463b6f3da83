"""Runtime configuration options, read by ``from ompy import MPI``: mpi4py's ``mpi4py.rc``.

mpi4py programs configure the import of ``mpi4py.MPI`` in two ways, and both work here::

    import ompy.rc                        # (or: from ompy import rc)
    ompy.rc.initialize = False            # attribute by attribute
    ompy.rc(initialize=False, finalize=True)   # or several at once, by calling it
    from ompy import MPI

Options (mpi4py 4.1's, with its defaults):

- ``initialize`` (True): initialize MPI when ``ompy.MPI`` is imported;
- ``threads`` (True): initialize with ``Init_thread(thread_level)``; False: ``Init()``;
- ``thread_level`` ("multiple"): "single", "funneled", "serialized" or "multiple";
- ``finalize`` (None): finalize MPI at exit; None means "if it was initialized at import";
- ``fast_reduce`` (True), ``recv_mprobe`` (True), ``irecv_bufsz`` (32768): object reductions
  through a tree, matched probes for receiving objects, the default buffer size of ``irecv()``;
- ``errors`` ("exception"): the error handler of ``COMM_WORLD`` and ``COMM_SELF``:
  "exception", "default", "abort" or "fatal".

An environment variable ``OMPY_RC_<OPTION>`` (``OMPY_RC_INITIALIZE=0``,
``OMPY_RC_THREAD_LEVEL=serialized``) overrides the program's setting at import, as
``MPI4PY_RC_<OPTION>`` does for mpi4py.  The values are read in
:mod:`ompy.ompi.api.rcoptions`.

Why a module that can be called: ``ompy`` is a namespace package shared by every distribution
(no ``ompy/__init__.py`` may exist), so ``ompy.rc`` must be a module of its own.  mpi4py's
``rc`` is an object whose attributes are the options and which updates them when called; this
module is made that object by giving it a module class with ``__call__``, and that class also
rejects options that do not exist, as mpi4py's does.  ``ompy.ompi.api.rc`` is the same object.
"""

from __future__ import annotations

import sys
import types
from typing import Any

initialize: bool = True
threads: bool = True
thread_level: str = "multiple"
finalize: bool | None = None
fast_reduce: bool = True
recv_mprobe: bool = True
irecv_bufsz: int = 32768
errors: str = "exception"

#: The options, in mpi4py's order (the names ``rc`` accepts).
OPTIONS = (
    "initialize",
    "threads",
    "thread_level",
    "finalize",
    "fast_reduce",
    "recv_mprobe",
    "irecv_bufsz",
    "errors",
)


class _Rc(types.ModuleType):
    """The class of ``ompy.rc``: options as attributes, updated by calling the module."""

    def __call__(self, **kwargs: Any) -> None:
        """Update options."""
        for key in kwargs:
            if key not in OPTIONS:
                raise TypeError(f"ompy.rc: unexpected argument {key!r} (options: {OPTIONS})")
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in OPTIONS and not name.startswith("__"):
            raise TypeError(f"ompy.rc has no option {name!r} (options: {', '.join(OPTIONS)})")
        super().__setattr__(name, value)

    def __repr__(self) -> str:
        return "<ompy.rc>"


sys.modules[__name__].__class__ = _Rc
