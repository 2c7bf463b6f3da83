"""The output facility: every diagnostic ompy prints goes through Python :mod:`logging`.

Logger names say who speaks, as MCA parameter names do:

* ``ompy.<framework>.<component>`` for a component (``ompy.btl.tcp``): every component gets
  its logger as :attr:`~ompy.opal.mca.component.Component.log`;
* ``ompy.<framework>`` for a framework's own glue (selection, tables: ``ompy.coll``);
* ``ompy.<layer>`` for layer code outside the frameworks (``ompy.orte``: the run-time).

**Verbosity.**  Users turn diagnostics on with Open MPI's parameters and scale:
``<framework>_base_verbose`` from 0 to 100 (``--mca btl_base_verbose 20``).  When a framework
is opened, :func:`apply_verbosity` sets the level of the ``ompy.<framework>`` logger, which its
components' loggers inherit.  The mapping is explicit:

==================  ===============  ====================================================
``*_verbose``       logging level    what is shown
==================  ===============  ====================================================
0 (the default)     ``WARNING``      warnings and errors only
1 to 19             ``INFO``         selection: which component or module serves what
                                     (Open MPI's "component" verbosity is 10)
20 to 100           ``DEBUG``        the components' reasoning and set-up as well: each
                                     offer, why a component stays out, transport totals,
                                     per-call choices of tunable algorithms
==================  ===============  ====================================================

A component may have a verbosity parameter of its own on the same scale
(``coll_tuned_verbose``); the more verbose of the two wins for its logger.

**One handler.**  The ``ompy`` logger gets one handler when this module is first imported
(unless the application put a handler there before) that writes to ``sys.stderr``
lines such as ``[rank 3 pid 4242] btl tcp: tcp:lo:0: received 1024 bytes``: the prefix names
the process (its pid) and, once the run-time knows it, its rank (:func:`name_process`).  The
``ompy`` logger does not propagate to the root logger, so an application's own logging set-up
neither duplicates nor swallows these lines; to capture them, add a handler to the ``ompy``
logger.

**Hot paths** never call the logger unless verbosity is on: a module keeps a bool computed
once (``self.verbose = self.log.isEnabledFor(logging.DEBUG)``) and tests it first.

Loggers, levels and handlers live in :mod:`logging`'s own process-wide tree (a process has one
standard error); this module keeps no state of its own.
"""

from __future__ import annotations

import logging
import sys

#: Name of the logger above every ompy logger.
ROOT = "ompy"
#: Verbosity from which the selection is shown (``logging.INFO``).
VERBOSE_SELECTION = 1
#: Verbosity from which every component's reasoning is shown (``logging.DEBUG``).
VERBOSE_DETAIL = 20
#: The largest verbosity, as in Open MPI.
VERBOSE_MAX = 100


def level_for(verbosity: int) -> int:
    """The :mod:`logging` level that a ``*_verbose`` value (0-100) stands for (see the table)."""
    if isinstance(verbosity, bool) or not isinstance(verbosity, int):
        raise TypeError(f"a verbosity is an integer from 0 to {VERBOSE_MAX}, got {verbosity!r}")
    if not 0 <= verbosity <= VERBOSE_MAX:
        raise ValueError(f"a verbosity is an integer from 0 to {VERBOSE_MAX}, got {verbosity}")
    if verbosity >= VERBOSE_DETAIL:
        return logging.DEBUG
    if verbosity >= VERBOSE_SELECTION:
        return logging.INFO
    return logging.WARNING


def logger_name(*parts: str) -> str:
    """``ompy.<part>.<part>``: ``logger_name("btl", "tcp")`` is ``"ompy.btl.tcp"``."""
    for part in parts:
        if not part or "." in part:
            raise ValueError(f"logger name parts are non-empty and dot-free, got {parts!r}")
    return ".".join((ROOT, *parts))


def get_logger(*parts: str) -> logging.Logger:
    """The logger ``ompy.<parts...>``, with ompy's handler installed (see the module docs).

    ``get_logger("btl", "tcp")`` for a component, ``get_logger("coll")`` for a framework's
    glue, ``get_logger("orte")`` for layer code.
    """
    return logging.getLogger(logger_name(*parts))


def apply_verbosity(logger: logging.Logger, verbosity: int) -> logging.Logger:
    """Set ``logger``'s level from a ``*_verbose`` value; returns the logger."""
    logger.setLevel(level_for(verbosity))
    return logger


def apply_own_verbosity(logger: logging.Logger, verbosity: int) -> logging.Logger:
    """Apply a component's own verbosity parameter (``coll_tuned_verbose``) to its logger.

    The more verbose of it and the framework's ``<framework>_base_verbose`` (the level of the
    parent logger) wins; 0 leaves the component to follow its framework.
    """
    if verbosity == 0:
        logger.setLevel(logging.NOTSET)
        return logger
    parent = logger.parent.getEffectiveLevel() if logger.parent else logging.WARNING
    logger.setLevel(min(level_for(verbosity), parent))
    return logger


def name_process(label: str) -> None:
    """Put ``label`` (``"rank 3"``) before the pid in the prefix of every line from now on.

    The run-time calls it once it knows this process's identity.  An empty label goes back
    to the pid alone.
    """
    for handler in logging.getLogger(ROOT).handlers:
        if isinstance(handler.formatter, OmpyFormatter):
            handler.formatter.label = label


class OmpyFormatter(logging.Formatter):
    """``[<label> pid <pid>] <who>: <message>``, ``<who>`` being the logger name without
    ``ompy.`` and with spaces for dots (``btl tcp``)."""

    def __init__(self, label: str = "") -> None:
        super().__init__()
        self.label = label

    def format(self, record: logging.LogRecord) -> str:
        who = record.name.removeprefix(ROOT + ".").replace(".", " ")
        process = f"{self.label} pid {record.process}" if self.label else f"pid {record.process}"
        text = f"[{process}] {who}: {record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (tests replace it,
    the fork server's ranks get their own), never to the stream seen at configuration."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _configure() -> None:
    """Install ompy's one handler on the ``ompy`` logger, unless it has handlers already.

    Called once, at import (which Python serializes, so two threads never both install it).
    """
    root = logging.getLogger(ROOT)
    if root.level == logging.NOTSET:  # ompy's verbosity, not the application's root level
        root.setLevel(logging.WARNING)
    if root.handlers:
        return
    handler = _StderrHandler()
    handler.setFormatter(OmpyFormatter())
    root.addHandler(handler)
    root.propagate = False


_configure()
