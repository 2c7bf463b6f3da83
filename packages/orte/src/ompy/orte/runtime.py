"""The rank's run-time: who am I, how do I publish and find contact data, how do I end.

:func:`init` (idempotent per process) selects the ess component to learn the identity.  A
launched rank then connects to the launcher's control server and

* installs a ``sys.excepthook`` wrapper that reports an uncaught exception's traceback to the
  launcher before the usual hook prints it;
* keeps a watcher thread on the connection: if the launcher goes away, even killed by
  SIGKILL, the rank prints one line and exits with :data:`LOST_EXIT_CODE`, so no rank outlives
  its job; the same thread answers the launcher's ``stacks`` request and obeys ``terminate``
  by sending itself SIGTERM (the same signal a local launcher would send);
* registers :meth:`Runtime.finalize` with :mod:`atexit`.  After an uncaught exception the
  rank does *not* finalize at exit (it did not finish cleanly): the launcher sees the
  exception, then the connection close.  Nor does it when the layer above said it could not
  finish (:meth:`Runtime.unfinished`, e.g. MPI's Finalize at exit failed): the rank tells the
  launcher it is leaving without finalizing, and the launcher ends the job;
* removes ``OMPY_SECRET`` from ``os.environ`` once the identity is read, so that the
  processes a rank starts do not inherit the job's secret.

Exits before the job's end: a program that ends by ``SystemExit`` has its exit status noted
(:func:`note_exit`, called by the fork server's rank runner).  The layer that finalizes at exit
(MPI) asks :meth:`Runtime.leave_if_early` before its collective Finalize: if another rank has
not reached Finalize, that collective could wait for ever (the others may be blocked on this
rank), so the rank leaves at once with its exit status and the launcher ends the job.

A singleton (started without ``ompy run``) gets the same API backed by an in-process modex.

A rank started directly by a resource manager (``srun --mpi=pmi2``: the ess module's identity is
``direct``) has no launcher to report to.  Its modex, abort and finalize go through the ess
module's :class:`~ompy.orte.mca.ess.JobServices`, and whatever would leave its peers waiting
ends the whole job through them instead: an uncaught exception (after its traceback is
printed), a ``sys.exit`` with a non-zero status before Finalize, a layer that could not
finalize.  A ``sys.exit(0)`` finalizes normally, as every rank of a successful job does.  No
fork server runs such a program, so nobody sees its ``SystemExit``: the run-time wraps
``sys.exit`` to note the status (:func:`note_exit`) on the way out; a ``raise SystemExit``
written out is not seen, and then behaves as a normal end.  Nor is there a launcher to remove
the session directory of a rank the resource manager kills (it sends SIGTERM first): a
directly launched rank that has no SIGTERM handler of its own gets one that removes the
session directory, then dies of the signal as before.

Modex rules (the same in both modes): ``put`` stages a value locally (checked to be
msgpack-able at once; it comes back as msgpack returns it, so tuples become lists), ``commit``
publishes everything staged, ``fence`` waits for every rank, and ``get(rank, key)`` returns
what ``rank`` committed or raises :class:`~ompy.orte.control.ModexKeyError` naming both; it
never waits, and data is guaranteed visible after a fence that follows the commit.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import socket
import sys
import threading
import traceback
from collections.abc import Mapping
from typing import Any, NoReturn

import msgpack

from ompy.opal import output, proctitle
from ompy.orte.consequence import Consequential
from ompy.orte.control import ControlClient, ControlError, ModexStore, protocol
from ompy.orte.control.client import DEFAULT_CONNECT_TIMEOUT as CONNECT_TIMEOUT
from ompy.orte.control.environment import SECRET
from ompy.orte.mca.ess import Identity, JobServices
from ompy.orte.mca.ess.base import select_module

#: Exit status of a rank whose launcher went away (sysexits' EX_UNAVAILABLE).
LOST_EXIT_CODE = 69
#: How long life-cycle messages (abort, finalize, exception) may wait for the launcher.
LIFECYCLE_TIMEOUT = 10.0

_log = output.get_logger("orte")


class Modex:
    """This process's view of the job's key-value store; see the module docs for the rules."""

    def __init__(self, rank: int, backend: _Backend) -> None:
        self._rank = rank
        self._backend = backend
        self._staged: dict[str, Any] = {}
        self._generation = 0
        self._lock = threading.Lock()

    def put(self, key: str, value: Any) -> None:
        """Stage ``value`` under ``key`` until the next :meth:`commit`."""
        if not isinstance(key, str) or not key:
            raise TypeError(f"modex keys are non-empty strings, got {key!r}")
        try:
            packed = msgpack.packb(value, use_bin_type=True)
        except (TypeError, ValueError, OverflowError) as error:
            raise TypeError(
                f"the modex value for {key!r} cannot be published: {error} (use bytes, str, "
                f"int, float, bool, None, and lists or dicts of those)"
            ) from None
        with self._lock:
            self._staged[key] = msgpack.unpackb(packed, raw=False)

    def commit(self) -> None:
        """Publish every staged value to the other ranks."""
        with self._lock:
            staged, self._staged = self._staged, {}
        self._backend.commit(staged)

    def fence(self) -> None:
        """Wait until every rank of the job has entered this fence."""
        self._backend.fence(self._generation)
        self._generation += 1

    def get(self, rank: int, key: str) -> Any:
        """The value ``rank`` committed under ``key`` (``ModexKeyError`` if none)."""
        return self._backend.get(rank, key)

    @property
    def generation(self) -> int:
        """How many fences this process has completed."""
        return self._generation


class _Backend:
    def commit(self, data: dict[str, Any]) -> None:
        raise NotImplementedError

    def fence(self, generation: int) -> None:
        raise NotImplementedError

    def get(self, rank: int, key: str) -> Any:
        raise NotImplementedError


class _LocalBackend(_Backend):
    """A singleton's modex: the same store and rules as the server's, in this process."""

    def __init__(self) -> None:
        self._store = ModexStore(1)

    def commit(self, data: dict[str, Any]) -> None:
        self._store.commit(0, data)

    def fence(self, generation: int) -> None:
        self._store.enter_fence(0, generation)

    def get(self, rank: int, key: str) -> Any:
        return self._store.lookup(rank, key)


class _RemoteBackend(_Backend):
    def __init__(self, client: ControlClient) -> None:
        self._client = client

    def commit(self, data: dict[str, Any]) -> None:
        self._client.request(protocol.COMMIT, data=data)

    def fence(self, generation: int) -> None:
        self._client.request(protocol.FENCE, generation=generation)

    def get(self, rank: int, key: str) -> Any:
        return self._client.request(protocol.GET, rank=rank, key=key)


class _ServicesBackend(_Backend):
    """The modex of a directly launched rank: the resource manager's store (ess services)."""

    def __init__(self, services: JobServices) -> None:
        self._services = services

    def commit(self, data: dict[str, Any]) -> None:
        self._services.commit(data)

    def fence(self, generation: int) -> None:
        self._services.fence()

    def get(self, rank: int, key: str) -> Any:
        return self._services.get(rank, key)


class Runtime:
    """The initialized run-time of this process (get it from :func:`init`).

    Creating one for a launched identity connects to the launcher; :func:`init` is the way to
    get the process's runtime, with the hooks installed.
    """

    def __init__(
        self,
        identity: Identity,
        *,
        connect_timeout: float = CONNECT_TIMEOUT,
        services: JobServices | None = None,
    ) -> None:
        self.identity = identity
        self.pid = os.getpid()
        self._finalized = False
        self._failed = False
        self._lock = threading.Lock()
        self._previous_hook = sys.excepthook
        self._client: ControlClient | None = None
        #: ``(status, what the program did)`` when it ends by ``SystemExit`` (see note_exit).
        self.exit_request: tuple[int, str] | None = None
        #: Why the layer above could not finalize; set, the rank does not finalize at exit.
        self._unfinished: str | None = None
        #: The resource manager's services of a directly launched rank (else None).
        self._services = services
        if identity.direct:
            if services is None:
                raise ValueError("a directly launched rank needs its ess module's job services")
            self.modex = Modex(identity.rank, _ServicesBackend(services))
            return
        if identity.singleton:
            self.modex = Modex(identity.rank, _LocalBackend())
            return
        assert identity.server is not None and identity.secret is not None
        self._client = ControlClient.connect(
            identity.server,
            identity.secret,
            identity.jobid,
            identity.rank,
            pid=self.pid,
            host=socket.gethostname(),
            on_lost=self._on_lost,
            on_terminate=self._on_terminate,
            timeout=connect_timeout,
        )
        self.modex = Modex(identity.rank, _RemoteBackend(self._client))

    @property
    def finalized(self) -> bool:
        return self._finalized

    def abort(self, code: int = 1, message: str = "") -> NoReturn:
        """Tell the launcher to end the job, then exit this process with ``code``.

        An exit status must fit in 0..255; other codes are reported to the launcher as given
        and the process exits with 1.
        """
        code = int(code)
        if self._services is not None:
            with contextlib.suppress(Exception):
                _log.error(
                    "rank %d of job %s ends the job with code %d%s",
                    self.identity.rank,
                    self.identity.jobid,
                    code,
                    ": " + str(message) if message else "",
                )
            shutil.rmtree(self.identity.session_dir, ignore_errors=True)  # no atexit after _exit
            with contextlib.suppress(Exception):
                self._services.abort(code, str(message))
        elif self._client is not None:
            with contextlib.suppress(ControlError):
                self._client.request(
                    protocol.ABORT, timeout=LIFECYCLE_TIMEOUT, code=code, message=str(message)
                )
        else:
            _log.error("singleton aborted with code %d: %s", code, message)
            shutil.rmtree(self.identity.session_dir, ignore_errors=True)  # no atexit after _exit
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code if 0 <= code <= 255 else 1)

    def finalize(self) -> None:
        """Tell the launcher this rank finished cleanly and close the connection (idempotent)."""
        with self._lock:
            if self._finalized:
                return
            self._finalized = True
        if sys.excepthook is self._excepthook:
            sys.excepthook = self._previous_hook
        if self._services is not None:
            try:
                self._services.finalize()
            finally:
                if self.identity.local_rank == 0:
                    # Every rank left the session directory before the final fence (MPI's
                    # Finalize); no launcher removes it in a directly launched job.
                    shutil.rmtree(self.identity.session_dir, ignore_errors=True)
            return
        if self._client is None:
            shutil.rmtree(self.identity.session_dir, ignore_errors=True)
            return
        try:
            self._client.request(protocol.FINALIZE, timeout=LIFECYCLE_TIMEOUT)
        finally:
            self._client.close()

    def service(self, op: str, **fields: Any) -> Any:
        """Ask the launcher's dynamic-process services (``protocol.OPEN_PORT``, ``MEET``,
        ``PUBLISH``, ``SPAWN``, ...): the reply's value, or the refusal as a
        :class:`~ompy.orte.control.ControlError`.  Waits as long as the service does (a
        rendezvous waits for its other side).  A process without a launcher (a singleton, or
        one started by a resource manager) has none: :class:`RuntimeError` says so.
        """
        if self._client is None:
            how = "a singleton" if self.identity.singleton else "started without ompy run"
            raise RuntimeError(
                f"this process is {how}: dynamic processes (spawn, ports, names) need the "
                f"launcher's services; start the program with 'ompy run'"
            )
        return self._client.request(op, **fields)

    def announce_finalizing(self) -> None:
        """Tell the launcher this rank entered the closing synchronization (MPI Finalize).

        A rank that later calls ``sys.exit`` may finalize with the others only once every
        rank has announced this (see :meth:`leave_if_early`).
        """
        if self._client is not None and not self._finalized:
            self._client.request(protocol.FINALIZING, timeout=LIFECYCLE_TIMEOUT)

    def leave_if_early(self) -> None:
        """Before a finalize at exit: leave now if the program ended by ``sys.exit`` early.

        Does nothing unless the program ended by ``SystemExit`` (:attr:`exit_request`) in a
        launched rank.  The launcher answers whether every other rank has reached Finalize or
        called ``sys.exit`` too (waiting ``orte_exit_grace`` seconds for it): then the rank
        finalizes with them (a normal end) and this returns; otherwise the launcher ends the
        job with this rank's exit status, and the rank exits at once with that status,
        without the collective Finalize its peers could never join.
        """
        if self._services is not None and not self._finalized and self.exit_request:
            status, how = self.exit_request
            if status != 0:  # the peers may wait for this rank: end the job with its status
                self._finalized = True
                self.abort(status, f"rank {self.identity.rank} {how} before MPI Finalize")
            return
        if self._client is None or self._finalized or self.exit_request is None:
            return
        status, how = self.exit_request
        try:
            # No timeout: the launcher answers within orte_exit_grace, or is gone.
            may_finalize = self._client.request(protocol.LEAVING, code=status, how=how)
        except ControlError:
            may_finalize = False  # the launcher is gone or refused: do not wait for anyone
        if not may_finalize:
            self._finalized = True
            self._exit_now(status)

    def unfinished(self, reason: str) -> None:
        """The layer above could not finalize (``reason`` says why): do not finalize at exit.

        At exit the rank tells the launcher it leaves without finalizing, with ``reason``.
        """
        self._unfinished = reason

    def report_exception(self, tb_text: str, *, consequential: bool = False) -> bool:
        """Send a traceback to the launcher, which prints it with this rank's number.

        ``consequential``: the exception was raised because another rank failed first.
        Returns whether the launcher has it; a singleton, or a rank that lost its launcher,
        must print the traceback itself.
        """
        self._failed = True
        if self._client is None or self._finalized:
            return False
        self._client.request(
            protocol.EXCEPTION,
            timeout=LIFECYCLE_TIMEOUT,
            traceback=str(tb_text),
            consequential=consequential,
        )
        return True

    # -- hooks -------------------------------------------------------------------------------

    def _excepthook(self, kind, value, tb) -> None:
        # The launcher prints a reported traceback once, tagged with the rank, and only for the
        # rank that failed first; printing it here too would show every rank's consequential
        # errors (peers failing their next fence) as well.
        from ompy.opal.mca import MCAError
        from ompy.opal.mca.params import ParamError

        if isinstance(value, (MCAError, ParamError)):
            # A configuration the user must fix (a component that cannot run, a bad value):
            # the message says what and where; the frames of the selection code would not.
            text = f"{kind.__name__}: {value}\n"
        else:
            text = "".join(traceback.format_exception(kind, value, tb))
        try:
            delivered = self.report_exception(text, consequential=isinstance(value, Consequential))
        except Exception:  # reporting must never hide the original error
            delivered = False
        if not delivered:
            self._previous_hook(kind, value, tb)
        if self._services is not None and not self._finalized:
            # Nobody else would notice: the peers could wait for this rank for ever.
            self._finalized = True
            self.abort(1, f"rank {self.identity.rank} raised {kind.__name__}")

    def _at_exit(self) -> None:
        if self._finalized or os.getpid() != self.pid:
            return
        if self._services is not None and self._unfinished is not None:
            self._finalized = True
            self.abort(
                1, f"rank {self.identity.rank} exited without finalizing ({self._unfinished})"
            )
        if self._failed and self._client is not None:
            self._finalized = True
            self._client.close()
            return
        if self._unfinished is not None and self._client is not None:
            self._finalized = True
            with contextlib.suppress(ControlError):
                self._client.request(
                    protocol.LEAVING,
                    timeout=LIFECYCLE_TIMEOUT,
                    code=None,
                    how=f"exited without finalizing ({self._unfinished})",
                )
            self._client.close()
            return
        with contextlib.suppress(ControlError):
            self.finalize()

    @staticmethod
    def _exit_now(status: int) -> NoReturn:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)

    def _on_lost(self, reason: str) -> None:
        with contextlib.suppress(Exception):
            _log.error(
                "rank %d of job %s: %s; exiting", self.identity.rank, self.identity.jobid, reason
            )
        os._exit(LOST_EXIT_CODE)

    def _on_terminate(self, reason: str) -> None:
        with contextlib.suppress(Exception):
            _log.warning(
                "rank %d of job %s: terminated by the launcher%s",
                self.identity.rank,
                self.identity.jobid,
                ": " + reason if reason else "",
            )
        os.kill(os.getpid(), signal.SIGTERM)


_runtime: Runtime | None = None
_init_lock = threading.Lock()


def _connect_timeout() -> float:
    """``orte_connect_timeout`` from the process's parameters (the launcher passes ``--mca``)."""
    from ompy.opal.mca.params import registry

    from .layer import register_params

    params = registry()
    register_params(params)
    return params.get("orte_connect_timeout")


def note_exit(status: int, how: str) -> None:
    """The program is ending by ``SystemExit`` with exit ``status``; ``how`` says it in words.

    Called by whoever runs the program and sees the exception (the fork server's rank runner)
    before the interpreter's exit handlers run; a process without a run-time ignores it.
    """
    runtime = _runtime
    if runtime is not None and runtime.pid == os.getpid():
        runtime.exit_request = (status, how)


def _exit_status(code: object) -> int:
    """The exit status the interpreter makes of ``SystemExit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    return 1


def _note_sys_exit() -> None:
    """Make ``sys.exit`` tell the run-time its status first (a directly launched rank)."""
    original = sys.exit

    def exit(status: object = None, /) -> NoReturn:
        shown = repr(status) if len(repr(status)) <= 40 else repr(status)[:37] + "..."
        note_exit(_exit_status(status), f"called sys.exit({'' if status is None else shown})")
        original(status)

    exit.__doc__ = original.__doc__
    sys.exit = exit


def _clean_up_on_sigterm(session: str) -> None:
    """On SIGTERM, remove ``session`` and die of the signal (a directly launched rank)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        return  # the program (or whoever embeds it) handles SIGTERM itself

    def terminated(signum: int, frame: object) -> None:
        shutil.rmtree(session, ignore_errors=True)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, terminated)


def _show_identity(identity: Identity) -> None:
    """Let ``ps`` tell the ranks apart: ``ompy rank 3/8 of job 1a2b: python app.py``."""
    proctitle.set_title(
        f"ompy rank {identity.rank}/{identity.size} of job {identity.jobid}: "
        f"{shlex.join(sys.orig_argv)}",
        name=f"ompy-rank{identity.rank}",
    )


def init(environ: Mapping[str, str] | None = None) -> Runtime:
    """Start the run-time of this process, or return the one already started.

    ``environ`` (default ``os.environ``) is where the ess components look for the launcher's
    variables.
    """
    global _runtime
    with _init_lock:
        if _runtime is not None:
            if _runtime.pid != os.getpid():
                raise RuntimeError(
                    "ompy.orte.runtime.init() in a forked child of an initialized rank: a child "
                    "process cannot share its parent's identity; start it with 'ompy run'"
                )
            return _runtime
        _component, module = select_module(environ)
        identity = module.identity()
        services = module.job_services(identity)
        if environ is None:
            # Read: the processes this rank starts must not inherit the job's secret.
            os.environ.pop(SECRET, None)
        if identity.singleton:
            os.makedirs(identity.session_dir, mode=0o700, exist_ok=True)
        runtime = Runtime(identity, connect_timeout=_connect_timeout(), services=services)
        output.name_process(f"rank {identity.rank}")
        if not identity.singleton:
            _show_identity(identity)
            sys.excepthook = runtime._excepthook
        if identity.direct:
            _note_sys_exit()
            _clean_up_on_sigterm(identity.session_dir)
        atexit.register(runtime._at_exit)
        _runtime = runtime
        return runtime
